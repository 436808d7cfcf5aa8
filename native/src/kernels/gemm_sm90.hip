// gemm_sm90: y[M][N] = act(x[M][K] . W[N][K]^T + b), half storage, float
// accumulation, on Hopper's warpgroup tensor-core products (wgmma) fed by
// the tensor memory accelerator (TMA). Design and measurements:
// native/docs/GEMM_SM90.md.
//
// Why it exists: cuBLAS's products are near the tensor cores' peak, but their
// output goes back to memory as is and a second kernel reads it again for
// the bias and activation (bias_act: ~40 us a layer for bt4's FFN at batch
// 256, half as long as the product). Here the bias and activation are
// applied to the accumulators before the one rounding to half and the one
// write.
//
// Persistent blocks of three warpgroups, one per multiprocessor: one thread
// of the first issues the TMA copies of x's and W's 64-column slices into a
// ring of stages; the other two run wgmma on the stages and hand each back
// once its products are done, either taking 128 x 256 tiles of y in turns
// with half sums (wide ping-pong, the default), or sharing each 128 x 256
// tile with float sums (cooperative), or taking 128 x 128 tiles in turns
// where N is no multiple of 256 (ping-pong: one's epilogue overlaps the
// other's products). The epilogue writes y through shared memory and TMA
// stores (store_tile). See Schedule and the kernel below.
//
// Other devices: under hipcc, and in NVIDIA builds not for sm_90a, this file
// defines stubs that return false, and the caller runs its BLAS product.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

#if defined(LC0ROCM_SM90A_BUILD)
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensor_map.h"
#include "wgmma_tile.h"
#endif

namespace lc0rocm {

#if defined(LC0ROCM_SM90A_BUILD)

namespace sm90_gemm {

// Three schedules, by the width of a block's tile of y (kTileN) and the sums:
// - 128 ("ping-pong", float sums): the consumers take the block's 128 x 128
//   tiles in turns, each running both 64-row halves; one's epilogue (bias,
//   activation, stores) overlaps the other's products.
// - 256 ("cooperative", float sums): both consumers work on every 128 x 256
//   tile, 64 rows each; a tile's operands serve twice the products (half
//   the shared-memory traffic per product), and the epilogues do not
//   overlap.
// - 256 and kWide ("wide ping-pong", half sums): the consumers take the
//   block's 128 x 256 tiles in turns, as ping-pong, each holding its whole
//   tile as half pairs (128 registers a thread, where float sums would
//   need 256): the cooperative tile's products per byte, and the epilogues
//   overlap. Each k16 step is two m64n256k16 run by one consumer.
constexpr int kTileM = 128, kTileK = 64;  // kTileK: one 128-byte swizzle row of halves
constexpr int kConsumers = 2;              // warpgroups running products
constexpr int kThreads = (1 + kConsumers) * 128;  // and one producer warpgroup
constexpr int kAccumulators = 128;         // floats per consumer thread: 128 x 128 or 64 x 256 over 128 threads
// The epilogue's boxes of y: 64 x 64 halves (128-byte rows, TMA's 128-byte
// swizzle), two per consumer, filled and stored in turns.
constexpr int kOutBox = 64;
constexpr int kOutBoxes = 2;
constexpr unsigned kOutBoxBytes = kOutBox * kOutBox * sizeof(__half);
static_assert(kOutBox == kTileK && kTileK == sm90::kBoxCols, "x's, W's and y's boxes: tensor_map.h's shape");

template <int kTileN, bool kWide = false>
struct Schedule {
  static constexpr bool kPingPong = kTileN == 128 || kWide;
  static constexpr int kStages = kTileN == 128 ? 6 : 4;
  static constexpr unsigned kStageABytes = kTileM * kTileK * sizeof(__half);
  static constexpr unsigned kStageBBytes = kTileN * kTileK * sizeof(__half);
  // The stages, 1,024-byte aligned for the swizzle (hence the slack), then
  // each consumer's two output boxes (store_tile), then the full and empty
  // barriers of each stage and the consumers' turn barriers: 230,480 bytes
  // (cooperative) and 230,512 (ping-pong) of the 232,448 a block may have.
  static constexpr size_t kSharedBytes = 1024 + kStages * (kStageABytes + kStageBBytes) +
                                         kConsumers * kOutBoxes * kOutBoxBytes +
                                         (2 * kStages + kConsumers) * sizeof(uint64_t);
};
static_assert(kTileM * 128 / 128 == kAccumulators, "ping-pong: a consumer's 128 threads hold a 128 x 128 tile");
static_assert(kTileM / kConsumers * 256 / 128 == kAccumulators,
              "cooperative: each consumer's 128 threads hold its 64 x 256 share of a 128 x 256 tile");

// Stores 64 rows x kCols columns of a warpgroup's accumulators (PTX ISA,
// wgmma .m64nNk16 D fragments: warp w holds rows 16w + g and 16w + g + 8, g
// = lane / 4; d[4j], d[4j + 1] are columns 8j + 2t, + 1 of the first row, t
// = lane % 4, d[4j + 2], d[4j + 3] those of the second), bias and activation
// applied, at y's rows from row0 and columns from col0 (y_map: boxes of 64 x
// 64; rows from M on are not written).
//
// Why through shared memory: each thread holds 4-byte pieces of 16 rows, so
// stores straight from the accumulators are 4-byte stores that keep the
// warps waiting on the memory pipeline (ncu: "LG throttle"), and they ran
// at 0.67-0.75x of cuBLAS's speed. Here a 64-column box at a time goes into
// one of the warpgroup's two shared boxes (128-byte swizzled like the
// operands: the eight rows a store instruction covers land in different
// banks) and leaves by one TMA store, asynchronously, while the warpgroup
// fills the other box and then runs its next tile: as fast as cuBLAS
// (native/docs/GEMM_SM90.md). `boxes` is the warpgroup's pair; `barrier` its
// named barrier.
template <int kCols, Activation kAct, typename Sum>
__device__ __forceinline__ void store_tile(const Sum* d, __half* boxes, const CUtensorMap* y_map,
                                           const float* bias, int row0, int col0, Activation act, int barrier) {
  static_assert(kCols % (2 * kOutBox) == 0, "an even count of boxes, so the pair is taken in turns across calls");
  using namespace wgmma;
  const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
  const int g = lane / 4, t = lane % 4;
  const int row = warp * 16 + g;  // in the box; row % 8 == g, which the swizzle takes
  const bool leader = threadIdx.x % 128 == 0;
#pragma unroll
  for (int q = 0; q < kCols / kOutBox; ++q) {
    __half* box = boxes + (q % kOutBoxes) * kOutBox * kOutBox;
    const unsigned box_address = shared_address(box);
    // The store that last read this box (two boxes ago) is done reading it.
    if (leader) bulk_wait_read<kOutBoxes - 1>();
    named_barrier_sync(barrier, 128);
#pragma unroll
    for (int c = 0; c < kOutBox / 8; ++c) {  // 8-column pieces, 16 bytes of a 128-byte row
      const int j = q * (kOutBox / 8) + c;
      const int col = col0 + 8 * j + 2 * t;
      const float2 b = bias ? *reinterpret_cast<const float2*>(bias + col) : make_float2(0.0f, 0.0f);
      // Float sums: elements 4j .. 4j + 3; half pairs: registers 2j, 2j + 1.
      float2 d0, d1;
      if constexpr (std::is_same<Sum, float>::value) {
        d0 = make_float2(d[4 * j], d[4 * j + 1]);
        d1 = make_float2(d[4 * j + 2], d[4 * j + 3]);
      } else {
        d0 = __half22float2(*reinterpret_cast<const __half2*>(&d[2 * j]));
        d1 = __half22float2(*reinterpret_cast<const __half2*>(&d[2 * j + 1]));
      }
      const __half2 first = activate_pair_as<kAct>(d0.x + b.x, d0.y + b.y, act);
      const __half2 second = activate_pair_as<kAct>(d1.x + b.x, d1.y + b.y, act);
      // 128-byte swizzle: 16-byte piece c of row r sits at c ^ (r % 8).
      const unsigned piece = static_cast<unsigned>(((c ^ g) * 16) + 4 * t);
      store_shared_u32(box_address + row * 128 + piece, *reinterpret_cast<const unsigned*>(&first));
      store_shared_u32(box_address + (row + 8) * 128 + piece, *reinterpret_cast<const unsigned*>(&second));
    }
    fence_async_shared();
    named_barrier_sync(barrier, 128);
    if (leader) {
      tma_store_2d(y_map, box, col0 + q * kOutBox, row0);
      bulk_commit();
    }
  }
}

// Persistent: block b takes tiles b, b + gridDim.x, ... (column tile
// t % n_tiles, row tile t / n_tiles counted from the last). From the last,
// because x's last rows are the ones its writer left in L2 (in the encoder
// the output product's layer norm wrote x1 from the first row), and the
// next kernel, which reads y from the first, finds y's first rows there.
// H100 run 64, against the walk from the first: kernels a pass bt4 b256
// -1.1 %, b512 -2.7 %, t82 b512 -1.0 %; native/docs/GEMM_SM90.md.
//
// The producer fills the stage ring in tile order: the block's i-th tile,
// k-tile kt is fill seq = i * k_tiles + kt, in stage seq % kStages, after
// the release of fill seq - kStages there. Ping-pong:
// tile i goes to consumer i % 2, which starts its products only once the
// other has issued those of tile i - 1 (its turn barrier): the product loops
// take turns, and every wait on a stage's barrier stays within one phase of
// it, which a parity wait needs.
// Tile i of the block's is row tile row_tiles - 1 - g / n_tiles, column
// tile g % n_tiles, g = blockIdx.x + i * gridDim.x (the last rows first).
// kWide: the wide ping-pong schedule (Schedule above): the products sum in
// half (wgmma .f16 accumulators, as lc0's cuda backend's cublasHgemm),
// widened to float in the epilogue; same speed per product, less energy,
// which counts at the power cap (native/docs/GEMM_SM90.md, "Half sums"). Its
// consumers take the registers the producer warpgroup gives up (setmaxnreg).
template <int kTileN, Activation kAct, bool kWide = false>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_sm90_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                     const __grid_constant__ CUtensorMap y_map, const float* bias, int M, int N, int K,
                     Activation act) {
  // nvcc -arch=sm_90a also emits compute_90 PTX, which has no wgmma: the body
  // is empty there (DeviceInfo::wgmma never lets that code run).
#if defined(LC0ROCM_WGMMA_AVAILABLE)
  using namespace wgmma;
  using S = Schedule<kTileN, kWide>;
  static_assert(!kWide || kTileN == 256, "wide ping-pong: 128 x 256 tiles in half");
  constexpr int kStages = S::kStages;
  extern __shared__ unsigned char shared_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  __half* stage_x = reinterpret_cast<__half*>(base);
  __half* stage_w = reinterpret_cast<__half*>(base + kStages * S::kStageABytes);
  __half* out_boxes = reinterpret_cast<__half*>(base + kStages * (S::kStageABytes + S::kStageBBytes));
  uint64_t* full = reinterpret_cast<uint64_t*>(reinterpret_cast<unsigned char*>(out_boxes) +
                                               kConsumers * kOutBoxes * kOutBoxBytes);
  uint64_t* empty = full + kStages;
  uint64_t* turn = empty + kStages;  // ping-pong: turn[c], the other consumer issued its tile's products

  const int warpgroup = threadIdx.x / 128;
  const int k_tiles = K / kTileK;
  const int n_tiles = N / kTileN;
  const int row_tiles = (M + kTileM - 1) / kTileM;
  const int groups = row_tiles * n_tiles;
  const int block = blockIdx.x, blocks = gridDim.x;  // the block takes tiles g = block, block + blocks, ...
  // The first row of tile g (counted from the last), for the producer and
  // the consumers alike.
  auto tile_row = [&](int g) { return (row_tiles - 1 - g / n_tiles) * kTileM; };
  constexpr int kReleases = S::kPingPong ? 1 : kConsumers;  // of each fill of a stage

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(&full[s], 1);           // the producer's arrival, with the bytes
      barrier_init(&empty[s], kReleases);  // the consumers of the stage's tile
    }
    for (int c = 0; c < kConsumers; ++c) barrier_init(&turn[c], 1);
    barrier_init_fence();
  }
  __syncthreads();
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // x is the prior kernel's output; y may be its input

  if (warpgroup == 0) {
    if constexpr (kWide) registers_decrease<40>();  // the consumers hold 128 x 256 halves each
    if (threadIdx.x == 0) {
      int seq = 0;
      for (int g = block; g < groups; g += blocks) {
        const int m0 = tile_row(g), n0 = (g % n_tiles) * kTileN;
        for (int kt = 0; kt < k_tiles; ++kt, ++seq) {
          const int s = seq % kStages;
          if (seq >= kStages) barrier_wait(&empty[s], ((seq / kStages) - 1) & 1);
          barrier_arrive_expect_bytes(&full[s], S::kStageABytes + S::kStageBBytes);
          tma_load_2d(stage_x + s * (S::kStageABytes / sizeof(__half)), &x_map, kt * kTileK, m0, &full[s]);
          tma_load_2d(stage_w + s * (S::kStageBBytes / sizeof(__half)), &w_map, kt * kTileK, n0, &full[s]);
        }
      }
    }
  } else {
    if constexpr (kWide) registers_increase<232>();
    const int consumer = warpgroup - 1;
    const int first = S::kPingPong ? consumer : 0;     // the consumer's first tile of the block's
    const int stride = S::kPingPong ? kConsumers : 1;  // and every how many
    __half* boxes = out_boxes + consumer * kOutBoxes * kOutBox * kOutBox;
    const int barrier = 1 + consumer;  // named barrier ids 1, 2 (0 is __syncthreads')
    auto release = [&](int stage) {
      if (threadIdx.x % 128 == 0) barrier_arrive(&empty[stage]);
    };
    for (int i = first, g = block + first * blocks; g < groups; i += stride, g += stride * blocks) {
      // Ping-pong: tile i - 1 is the other consumer's (i / 2 - 1)-th for
      // consumer 0, its (i / 2)-th for consumer 1: the turn phase to wait for.
      if (S::kPingPong && i > 0) barrier_wait(&turn[consumer], (consumer == 0 ? i / 2 - 1 : i / 2) & 1);
      const int m0 = tile_row(g), n0 = (g % n_tiles) * kTileN;
      int seq = i * k_tiles;
      // The k-loop on either kind of sums (d: float acc, or half pairs).
      auto run_products = [&](auto& d) {
#pragma unroll
        for (auto& a : d) a = 0;
        for (int kt = 0; kt < k_tiles; ++kt, ++seq) {
          const int s = seq % kStages;
          barrier_wait(&full[s], (seq / kStages) & 1);
          const __half* xs = stage_x + s * (S::kStageABytes / sizeof(__half));
          const __half* ws = stage_w + s * (S::kStageBBytes / sizeof(__half));
          fence_accumulators(d);
          wgmma_fence();
#pragma unroll
          for (int k = 0; k < kTileK / 16; ++k) {
            const uint64_t w_desc = operand_descriptor(ws + 16 * k);
            if constexpr (kWide) {
              wgmma_64x256x16(d, operand_descriptor(xs + 16 * k), w_desc);                    // rows 0-63
              wgmma_64x256x16(d + 64, operand_descriptor(xs + 64 * kTileK + 16 * k), w_desc);  // rows 64-127
            } else if constexpr (S::kPingPong) {
              wgmma_64x128x16(d, operand_descriptor(xs + 16 * k), w_desc);                    // rows 0-63
              wgmma_64x128x16(d + 64, operand_descriptor(xs + 64 * kTileK + 16 * k), w_desc);  // rows 64-127
            } else {
              wgmma_64x256x16(d, operand_descriptor(xs + consumer * 64 * kTileK + 16 * k), w_desc);
            }
          }
          wgmma_commit();
          // The products of the k-tile before are done: its stage may be refilled
          // while this one's run.
          wgmma_wait<1>();
          fence_accumulators(d);
          if (kt > 0) release((seq - 1) % kStages);
        }
        if (S::kPingPong && threadIdx.x % 128 == 0) barrier_arrive(&turn[1 - consumer]);
        wgmma_wait<0>();
        fence_accumulators(d);
        release((seq - 1) % kStages);
      };
      if constexpr (kWide) {
        // The whole tile as half pairs, widened pair by pair as it is stored.
        unsigned sums[kAccumulators];  // 128 x 256 halves: rows 0-63, then 64-127
        run_products(sums);
        store_tile<256, kAct>(sums, boxes, &y_map, bias, m0, n0, act, barrier);
        store_tile<256, kAct>(sums + 64, boxes, &y_map, bias, m0 + 64, n0, act, barrier);
      } else {
        float acc[kAccumulators];
        run_products(acc);
        if constexpr (S::kPingPong) {
          store_tile<128, kAct>(acc, boxes, &y_map, bias, m0, n0, act, barrier);
          store_tile<128, kAct>(acc + 64, boxes, &y_map, bias, m0 + 64, n0, act, barrier);
        } else {
          store_tile<256, kAct>(acc, boxes, &y_map, bias, m0 + consumer * 64, n0, act, barrier);
        }
      }
    }
    if (threadIdx.x % 128 == 0) bulk_wait_all();  // y is written before the block leaves
  }
#endif
}

// Every instantiation with_activation may launch, each given the shared
// memory it needs above the 48 KB default.
template <int kTileN, Activation kAct, bool kWide = false>
bool allow_shared() {
  if (hipFuncSetAttribute(reinterpret_cast<const void*>(&gemm_sm90_kernel<kTileN, kAct, kWide>),
                          hipFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(Schedule<kTileN, kWide>::kSharedBytes)) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
  return true;
}

template <int kTileN, bool kWide = false>
bool allow_shared_all() {
  return allow_shared<kTileN, Activation::Relu, kWide>() && allow_shared<kTileN, Activation::None, kWide>() &&
         allow_shared<kTileN, Activation::Mish, kWide>() && allow_shared<kTileN, Activation::Relu2, kWide>() &&
         allow_shared<kTileN, Activation::Swish, kWide>() && allow_shared<kTileN, kAnyActivation, kWide>();
}

template <int kTileN, bool kWide = false>
void launch(hipStream_t stream, const DeviceInfo& device, const CUtensorMap& x_map, const CUtensorMap& w_map,
            const CUtensorMap& y_map, long long M, int N, int K, const float* bias, Activation act) {
  const long long groups = (M + kTileM - 1) / kTileM * (N / kTileN);
  const dim3 grid(static_cast<unsigned>(std::min<long long>(groups, device.multiprocessors)));
  with_activation(act, [&](auto tag) {
    gpu_launch(gemm_sm90_kernel<kTileN, decltype(tag)::value, kWide>, grid, dim3(kThreads),
               Schedule<kTileN, kWide>::kSharedBytes, stream, x_map, w_map, y_map, bias, static_cast<int>(M), N, K,
               act);
  });
  GPU_CHECK_LAUNCH();
}

}  // namespace sm90_gemm

bool gemm_sm90_prepare(const DeviceInfo& device) {
  using namespace sm90_gemm;
  if (!device.wgmma || device.shared_per_block < std::max(Schedule<128>::kSharedBytes, Schedule<256>::kSharedBytes) ||
      !sm90::tensor_maps_available())
    return false;
  return allow_shared_all<128>() && allow_shared_all<256>() && allow_shared_all<256, true>();
}

bool gemm_sm90(hipStream_t stream, const DeviceInfo& device, long long M, int N, int K, const void* x,
               const void* w, const float* bias, Activation act, void* y, bool half_sums) {
  using namespace sm90_gemm;
  static_assert(kTileK == limits::kSm90TileK && kTileM == limits::kSm90TileN, "plan/limits.h's shapes");
  if (M < 1 || M > (1LL << 30) || !device.wgmma || !limits::gemm_sm90_fits(N, K)) return false;
  if (!aligned(x, 16) || !aligned(w, 16) || !aligned(y, 16) || (bias && !aligned(bias, 8))) return false;
  const int tile_n = N % 256 == 0 ? 256 : 128;
  CUtensorMap x_map, w_map, y_map;
  if (!sm90::tile_map(&x_map, x, M, K, kTileM) || !sm90::tile_map(&w_map, w, N, K, tile_n) ||
      !sm90::tile_map(&y_map, y, M, N, kOutBox))
    return false;
  if (tile_n == 128) launch<128>(stream, device, x_map, w_map, y_map, M, N, K, bias, act);
  else if (half_sums) launch<256, true>(stream, device, x_map, w_map, y_map, M, N, K, bias, act);
  else launch<256>(stream, device, x_map, w_map, y_map, M, N, K, bias, act);
  return true;
}

#else

bool gemm_sm90_prepare(const DeviceInfo&) { return false; }
bool gemm_sm90(hipStream_t, const DeviceInfo&, long long, int, int, const void*, const void*, const float*, Activation,
               void*, bool) {
  return false;
}

#endif

}  // namespace lc0rocm
