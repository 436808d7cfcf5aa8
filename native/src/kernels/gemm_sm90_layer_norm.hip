// gemm_sm90_layer_norm: y = LN(alpha * (x[M][K] . W[N][K]^T + b) + skip)
// * gammas + betas, half storage, float (or half) accumulation, float
// statistics, in one launch on Hopper's warpgroup products (wgmma) fed by
// TMA: the encoder layers' output and FFN second products with the post-LN
// after them.
// Design and measurements: native/docs/GEMM_SM90.md ("Layer norms in the
// epilogue").
//
// Why it exists: the product's output went to memory and a layer_norm pass
// read it back with the skip and wrote the result (bt4 b256: ~38 us a layer
// norm, 31 a pass). Here the skip comes into shared memory by TMA while the
// products run, the layer norm's statistics are exchanged between the
// blocks that hold a row's columns, and only the result is written: the
// product's write and the layer norm's read of it are gone.
//
// Layout. Groups of N / 256 blocks (1-4): block r of a group owns columns
// 256 r .. 256 r + 255 of every row tile the group takes (tiles g, g +
// groups, ...), so a group's blocks run the same tiles in step. Each block
// is three warpgroups: one thread of the first issues the TMA copies of x's
// and W's 64-column slices into a ring of 4 stages, then each consumer's
// 64 rows of the tile's skip into a stage of the same ring (so no buffer of
// its own takes the fourth stage's room); the other two run wgmma, 64 rows
// x 256 columns each (gemm_sm90.hip's cooperative schedule). Their epilogue:
//   1. v = alpha * (acc + b) + skip, in the accumulators;
//   2. each row's mean and sum of squared deviations over the block's 256
//      columns (the four lanes holding a row's pieces, by shuffles);
//   3. the pairs go to the group's slots in global memory (a set per tile
//      parity) and the block publishes its flag there (a count of tiles);
//   4. once every block of the group has, each row's mean and variance over
//      N from the blocks' pairs (Chan's formula, equal counts), then (v -
//      mean) * rstd * gamma + beta to half, written over the skip at the
//      same swizzled places (a thread rewrites only what it read), and out
//      by TMA stores a 64 x 64 box at a time.
// Why groups through global memory and not thread block clusters sharing
// shared memory (the first version): an H100 runs only 30 clusters of 4
// such blocks (120 of its 132 multiprocessors) and 39 of 3, so bt4's 128
// row tiles at batch 256 took 5 rounds instead of 4 and t82's 4 instead of
// 3: 93 against 75 us for bt4's output product (native/docs/GEMM_SM90.md). A
// cooperative launch keeps all blocks resident, which the groups' waits
// need. Two sets of slots (by tile parity): a block writes tile i + 2's
// only after it saw every flag of the group at tile i + 1, which each block
// published after reading tile i's.
//
// Other devices: under hipcc, and in NVIDIA builds not for sm_90a, this file
// defines stubs that return false, and the caller runs BLAS + layer_norm.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

#if defined(LC0ROCM_SM90A_BUILD)
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "tensor_map.h"
#include "wgmma_tile.h"
#endif

namespace lc0rocm {

#if defined(LC0ROCM_SM90A_BUILD)

namespace sm90_layer_norm {

constexpr int kTileM = 128, kTileN = 256, kTileK = sm90::kBoxCols;
constexpr int kConsumers = 2;                     // warpgroups running products, 64 rows each
constexpr int kThreads = (1 + kConsumers) * 128;  // and one producer warpgroup
constexpr int kAccumulators = 128;                // a consumer's 64 x 256 floats over 128 threads
constexpr int kStages = 4;                        // the ring: x's and W's slices, and the tiles' skip
constexpr int kMaxBlocks = 4;                     // of a group: N up to 1,024
constexpr int kBox = sm90::kBoxCols;              // skip and y in 64 x 64 boxes
constexpr int kBoxesPerConsumer = kTileN / kBox;
constexpr unsigned kStageXBytes = kTileM * kTileK * sizeof(__half);
constexpr unsigned kStageWBytes = kTileN * kTileK * sizeof(__half);
constexpr unsigned kBoxBytes = kBox * kBox * sizeof(__half);
constexpr unsigned kSkipBytes = kBoxesPerConsumer * kBoxBytes;  // a consumer's 64 rows of skip, then of y
static_assert(kSkipBytes <= kStageWBytes, "a consumer's skip fits a stage's W slice");
constexpr int kBarriers = 2 * kStages;  // full, empty
// The block's columns of bias, gammas and betas, read by every tile's
// epilogue: from shared memory rather than global loads, whose latency the
// epilogue waited for (ncu, run 29: a third of its stall samples).
constexpr unsigned kParamBytes = 3 * kTileN * sizeof(float);
// 1,024-byte alignment for the swizzle (hence the slack): 200,768 bytes of
// the 232,448 a block may have (a fifth stage would need 48 KB more).
constexpr size_t kSharedBytes =
    1024 + kStages * (kStageXBytes + kStageWBytes) + kBarriers * sizeof(uint64_t) + kParamBytes;

// The exchange in global memory (the caller's): a 128-byte line of flags
// per group (block r's at word 8 r), then the statistics slots
// [group][parity][block][row] of float2 (mean, M2); both sized for the most
// groups the device runs (one per resident block), so every launch finds
// its groups' lines at the same place whatever its group count.
constexpr size_t kSyncBytes = 128;
constexpr int kFlagStride = 8;  // words: a group's flags 32 bytes apart
constexpr size_t kSlotsPerGroup = 2 * kMaxBlocks * kTileM;
static_assert(kMaxBlocks * kFlagStride * sizeof(unsigned) <= kSyncBytes, "a group's flags fit its line");

// A block's tiles of a launch are numbered 1, 2, ... above the launches
// before it since the reset, so a flag never holds a later launch's count.
constexpr int kTileBits = 20;
__device__ __forceinline__ unsigned flag_count(int launch, int local) {
  return (static_cast<unsigned>(launch + 1) << kTileBits) + static_cast<unsigned>(local + 1);
}

// The group's exchange of a tile's statistics. The block has written its
// slots (ordered before this by a barrier of its consumers); one thread
// publishes the tile's count in the block's flag with a release store, and
// one lane per other block of the group waits for that block's flag with
// acquire loads, side by side. Why flags and not one counter that blocks
// add to and the last flips (the first version): that took an atomic round
// trip to L2, then the last block's store, before anyone read a slot; here
// the publish and the waits overlap (ncu, run 30 A: the barrier was ~10 %
// of the kernel's stall samples).
__device__ __forceinline__ void store_release(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The producer's thread needs few registers; the consumers' epilogue holds
// the 128 accumulators, their statistics and the row's parameters: 168 a
// thread spilled there (launch_bounds' share of 65,536 over 384 threads).
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
// setmaxnreg only moves the registers the launch allocated (168 a thread:
// 65,536 over 384 threads, down to a multiple of 8): an increase beyond
// what the decreases freed waits for ever (run 30 B: a hang).
constexpr int kLaunchRegisters = 65536 / kThreads / 8 * 8;
static_assert(kProducerRegisters + kConsumers * kConsumerRegisters <= (1 + kConsumers) * kLaunchRegisters,
              "the registers the launch allocated");
static_assert(kAccumulators * 128 == kTileM / kConsumers * kTileN, "a consumer's 64 x 256 share");
static_assert(kTileN == 256, "the wgmma shape below is m64n256k16");

// kHalfSums: the products sum in half (wgmma .f16 accumulators, as lc0's
// cuda backend's cublasHgemm), widened to float for the epilogue (v, the
// statistics and y as before).
template <bool kHalfSums>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_sm90_layer_norm_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                                const __grid_constant__ CUtensorMap skip_map,
                                const __grid_constant__ CUtensorMap y_map, const float* bias, const float* gammas,
                                const float* betas, float alpha, float eps, int M, int N, int K, int launch,
                                unsigned* group_sync, float2* group_slots) {
  // nvcc -arch=sm_90a also emits compute_90 PTX, which has no wgmma: the body
  // is empty there (DeviceInfo::wgmma never lets that code run).
#if defined(LC0ROCM_WGMMA_AVAILABLE)
  using namespace wgmma;
  extern __shared__ unsigned char shared_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  __half* stage_x = reinterpret_cast<__half*>(base);
  __half* stage_w = reinterpret_cast<__half*>(base + kStages * kStageXBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(base + kStages * (kStageXBytes + kStageWBytes));
  uint64_t* empty = full + kStages;
  float* block_bias = reinterpret_cast<float*>(empty + kStages);  // [256], then gammas, betas
  float* block_gammas = block_bias + kTileN;
  float* block_betas = block_gammas + kTileN;

  const int warpgroup = threadIdx.x / 128;
  const int k_tiles = K / kTileK;
  const int row_tiles = (M + kTileM - 1) / kTileM;
  const int blocks = N / kTileN;  // the group's size
  const int rank = blockIdx.x % blocks;
  const int group = blockIdx.x / blocks, groups = gridDim.x / blocks;
  const int n0 = rank * kTileN;
  unsigned* sync = group_sync + group * (kSyncBytes / sizeof(unsigned));
  float2* slots = group_slots + group * kSlotsPerGroup;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(&full[s], 1);           // the producer's arrival, with the bytes
      barrier_init(&empty[s], kConsumers);  // both consumers' release
    }
    barrier_init_fence();
  }
  for (int i = threadIdx.x; i < kTileN; i += kThreads) {  // weights: no prior grid writes them
    block_bias[i] = bias ? bias[n0 + i] : 0.0f;
    block_gammas[i] = gammas[n0 + i];
    block_betas[i] = betas[n0 + i];
  }
  __syncthreads();
  gpu_wait_for_prior_grid();  // x and skip are prior kernels' outputs (a no-op: never a dependent launch)

  if (warpgroup == 0) {
    registers_decrease<kProducerRegisters>();
    if (threadIdx.x == 0) {
      // A tile takes k_tiles + 2 turns of the ring: its slices, then each
      // consumer's 64 rows of skip in a stage's W part (the consumer writes
      // y there and stores it from there).
      int seq = 0;
      auto take = [&](int at) {  // the stage of turn `at`, once both consumers released its last turn
        const int s = at % kStages;
        if (at >= kStages) barrier_wait(&empty[s], ((at / kStages) - 1) & 1);
        return s;
      };
      for (int tile = group; tile < row_tiles; tile += groups) {
        const int m0 = tile * kTileM;
        for (int kt = 0; kt < k_tiles; ++kt, ++seq) {
          const int s = take(seq);
          barrier_arrive_expect_bytes(&full[s], kStageXBytes + kStageWBytes);
          tma_load_2d(stage_x + s * (kStageXBytes / sizeof(__half)), &x_map, kt * kTileK, m0, &full[s]);
          tma_load_2d(stage_w + s * (kStageWBytes / sizeof(__half)), &w_map, kt * kTileK, n0, &full[s]);
        }
        for (int c = 0; c < kConsumers; ++c, ++seq) {
          const int s = take(seq);
          barrier_arrive_expect_bytes(&full[s], kSkipBytes);
          for (int q = 0; q < kBoxesPerConsumer; ++q)
            tma_load_2d(stage_w + s * (kStageWBytes / sizeof(__half)) + q * kBox * kBox, &skip_map, n0 + q * kBox,
                        m0 + c * (kTileM / kConsumers), &full[s]);
        }
      }
    }
  } else {
    registers_increase<kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const bool leader = threadIdx.x % 128 == 0;
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    const int g = lane / 4, t = lane % 4;
    // wgmma's D fragments (gemm_sm90.hip's store_tile): this thread holds
    // rows 16 warp + g and + 8 of the consumer's 64, columns 8j + 2t, + 1.
    const int box_row = warp * 16 + g;  // box_row % 8 == g, which the swizzle takes
    const int tile_row = consumer * (kTileM / kConsumers) + box_row;  // in the block's 128 rows
    const int named_barrier = 1 + consumer;  // ids 1, 2 (0 is __syncthreads')
    constexpr int kBothConsumers = 3;        // both consumers' 256 threads
    // Consumer 0's leader publishes the block's flag; lane r of its second
    // warp waits for block r's (not its own).
    const bool publisher = threadIdx.x == 128;
    const int watched = static_cast<int>(threadIdx.x) - 160;
    const bool watcher = watched >= 0 && watched < blocks && watched != rank;
    int seq = 0, local = 0;
    int stored = -1;  // the stage that holds the last tile's y, until its stores have read it
    for (int tile = group; tile < row_tiles; tile += groups, ++local) {
      const int m0 = tile * kTileM;
      float acc[kAccumulators];
      // The k-loop on either kind of sums (d: float acc, or half pairs).
      auto run_products = [&](auto& d) {
#pragma unroll
        for (auto& a : d) a = 0;
        for (int kt = 0; kt < k_tiles; ++kt, ++seq) {
          const int s = seq % kStages;
          barrier_wait(&full[s], (seq / kStages) & 1);
          const __half* xs = stage_x + s * (kStageXBytes / sizeof(__half)) + consumer * 64 * kTileK;
          const __half* ws = stage_w + s * (kStageWBytes / sizeof(__half));
          fence_accumulators(d);
          wgmma_fence();
#pragma unroll
          for (int k = 0; k < kTileK / 16; ++k)
            wgmma_64x256x16(d, operand_descriptor(xs + 16 * k), operand_descriptor(ws + 16 * k));
          wgmma_commit();
          // The last tile's stores are done reading its y: that stage may be
          // refilled (waited for here, with the first products in flight,
          // rather than at the end of the epilogue).
          if (kt == 0 && stored >= 0 && leader) {
            bulk_wait_read<0>();
            barrier_arrive(&empty[stored]);
          }
          // The products of the k-tile before are done: its stage may be refilled.
          wgmma_wait<1>();
          fence_accumulators(d);
          if (kt > 0 && leader) barrier_arrive(&empty[(seq - 1) % kStages]);
        }
        wgmma_wait<0>();
        fence_accumulators(d);
        if (leader) barrier_arrive(&empty[(seq - 1) % kStages]);
      };
      if constexpr (kHalfSums) {
        unsigned sums[kAccumulators / 2];
        run_products(sums);
        widen_sums(sums, acc);
      } else {
        run_products(acc);
      }

      // The tile's skip: this consumer's stage, and the other's, whose
      // landing proves the other consumer released that stage's last turn,
      // so this release cannot count toward it.
      const int own = seq + consumer, other = seq + 1 - consumer;
      seq += kConsumers;
      barrier_wait(&full[own % kStages], (own / kStages) & 1);
      barrier_wait(&full[other % kStages], (other / kStages) & 1);
      if (leader) barrier_arrive(&empty[other % kStages]);
      stored = own % kStages;
      __half* boxes = stage_w + stored * (kStageWBytes / sizeof(__half));
      const unsigned boxes_address = shared_address(boxes);

      // 1-2: v and the block's statistics of this thread's two rows.
      float sum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < kAccumulators / 4; ++j) {
        const int q = j / 8, c = j % 8;  // box, and 16-byte piece of its 128-byte row
        const float2 b = *reinterpret_cast<const float2*>(block_bias + 8 * j + 2 * t);
        // 128-byte swizzle: 16-byte piece c of row r sits at c ^ (r % 8).
        const unsigned piece = boxes_address + q * kBoxBytes + static_cast<unsigned>(((c ^ g) * 16) + 4 * t);
        const unsigned first = load_shared_u32(piece + box_row * 128);
        const unsigned second = load_shared_u32(piece + (box_row + 8) * 128);
        const float2 s0 = __half22float2(*reinterpret_cast<const __half2*>(&first));
        const float2 s1 = __half22float2(*reinterpret_cast<const __half2*>(&second));
        acc[4 * j] = (acc[4 * j] + b.x) * alpha + s0.x;
        acc[4 * j + 1] = (acc[4 * j + 1] + b.y) * alpha + s0.y;
        acc[4 * j + 2] = (acc[4 * j + 2] + b.x) * alpha + s1.x;
        acc[4 * j + 3] = (acc[4 * j + 3] + b.y) * alpha + s1.y;
        sum[0] += acc[4 * j] + acc[4 * j + 1];
        sum[1] += acc[4 * j + 2] + acc[4 * j + 3];
      }
      float mean[2], m2[2] = {0.0f, 0.0f};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        sum[h] += gpu_shfl_xor(sum[h], 1);
        sum[h] += gpu_shfl_xor(sum[h], 2);
        mean[h] = sum[h] / kTileN;
      }
#pragma unroll
      for (int j = 0; j < kAccumulators / 4; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float d = acc[4 * j + e] - mean[e / 2];
          m2[e / 2] += d * d;
        }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        m2[h] += gpu_shfl_xor(m2[h], 1);
        m2[h] += gpu_shfl_xor(m2[h], 2);
      }

      // 3: into the group's slots, then the group's exchange.
      const int parity = local & 1;
      float2* tile_slots = slots + parity * kMaxBlocks * kTileM;  // [block][row]
      if (t == 0) {
        tile_slots[rank * kTileM + tile_row] = make_float2(mean[0], m2[0]);
        tile_slots[rank * kTileM + tile_row + 8] = make_float2(mean[1], m2[1]);
      }
      named_barrier_sync(kBothConsumers, kConsumers * 128);
      const unsigned count = flag_count(launch, local);
      if (publisher) store_release(sync + rank * kFlagStride, count);
      if (watcher)
        while (load_acquire(sync + watched * kFlagStride) < count) {
        }
      named_barrier_sync(kBothConsumers, kConsumers * 128);

      // 4: the rows' statistics over N (from L2: other blocks wrote them), then y.
      float rstd[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float2 pairs[kMaxBlocks];
        float total = 0.0f;
#pragma unroll
        for (int r = 0; r < kMaxBlocks; ++r)
          if (r < blocks) {
            pairs[r] = __ldcg(tile_slots + r * kTileM + tile_row + 8 * h);
            total += pairs[r].x;
          }
        const float row_mean = total / blocks;
        float squares = 0.0f;
#pragma unroll
        for (int r = 0; r < kMaxBlocks; ++r)
          if (r < blocks) {
            const float2 pair = pairs[r];
          const float d = pair.x - row_mean;
            squares += pair.y + kTileN * d * d;
          }
        mean[h] = row_mean;
        rstd[h] = rsqrtf(squares / N + eps);
      }
#pragma unroll
      for (int q = 0; q < kBoxesPerConsumer; ++q) {
#pragma unroll
        for (int c = 0; c < kBox / 8; ++c) {
          const int j = q * (kBox / 8) + c;
          const float2 gm = *reinterpret_cast<const float2*>(block_gammas + 8 * j + 2 * t);
          const float2 bt = *reinterpret_cast<const float2*>(block_betas + 8 * j + 2 * t);
          const __half2 first = __floats2half2_rn((acc[4 * j] - mean[0]) * rstd[0] * gm.x + bt.x,
                                                  (acc[4 * j + 1] - mean[0]) * rstd[0] * gm.y + bt.y);
          const __half2 second = __floats2half2_rn((acc[4 * j + 2] - mean[1]) * rstd[1] * gm.x + bt.x,
                                                   (acc[4 * j + 3] - mean[1]) * rstd[1] * gm.y + bt.y);
          const unsigned piece = boxes_address + q * kBoxBytes + static_cast<unsigned>(((c ^ g) * 16) + 4 * t);
          store_shared_u32(piece + box_row * 128, *reinterpret_cast<const unsigned*>(&first));
          store_shared_u32(piece + (box_row + 8) * 128, *reinterpret_cast<const unsigned*>(&second));
        }
        fence_async_shared();
        named_barrier_sync(named_barrier, 128);
        if (leader) {
          tma_store_2d(&y_map, boxes + q * kBox * kBox, n0 + q * kBox, m0 + consumer * (kTileM / kConsumers));
          bulk_commit();
        }
      }
    }
    if (leader) bulk_wait_all();  // y is written before the block leaves
  }
#endif
}

// Blocks of the kernel the device runs at once, set by
// gemm_sm90_layer_norm_prepare (0: none).
std::atomic<int> resident_blocks{0};

}  // namespace sm90_layer_norm

// plan/limits.h's shapes (K: at least two slices; the nets' products have
// 12-24, measured there).
static_assert(sm90_layer_norm::kTileM == limits::kSm90NormTileM && sm90_layer_norm::kTileN == limits::kSm90NormTileN &&
                  sm90_layer_norm::kTileK == limits::kSm90NormTileK &&
                  sm90_layer_norm::kMaxBlocks == limits::kSm90NormMaxBlocks,
              "plan/limits.h's shapes");

int gemm_sm90_layer_norm_prepare(const DeviceInfo& device) {
  using namespace sm90_layer_norm;
  if (!device.wgmma || device.shared_per_block < kSharedBytes || !sm90::tensor_maps_available()) return 0;
  for (const void* kernel : {reinterpret_cast<const void*>(&gemm_sm90_layer_norm_kernel<false>),
                             reinterpret_cast<const void*>(&gemm_sm90_layer_norm_kernel<true>)})
    if (hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSharedBytes)) !=
        hipSuccess) {
      (void)hipGetLastError();
      return 0;
    }
  // Both instances take the same registers (168) and shared memory.
  int per_multiprocessor = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, gemm_sm90_layer_norm_kernel<false>, kThreads,
                                                    kSharedBytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  resident_blocks = per_multiprocessor * device.multiprocessors;
  return resident_blocks.load() >= kMaxBlocks ? resident_blocks.load() : 0;
}

size_t gemm_sm90_layer_norm_exchange_bytes() {
  using namespace sm90_layer_norm;
  return static_cast<size_t>(resident_blocks.load()) * (kSyncBytes + kSlotsPerGroup * sizeof(float2));
}

bool gemm_sm90_layer_norm_reset(hipStream_t stream, void* exchange) {
  using namespace sm90_layer_norm;
  return hipMemsetAsync(exchange, 0, static_cast<size_t>(resident_blocks.load()) * kSyncBytes, stream) == hipSuccess;
}

bool gemm_sm90_layer_norm(hipStream_t stream, const DeviceInfo& device, long long M, int N, int K, const void* x,
                          const void* w, const float* bias, const void* skip, const float* gammas,
                          const float* betas, float alpha, float eps, void* y, void* exchange, int launch,
                          bool half_sums) {
  using namespace sm90_layer_norm;
  if (M < 1 || M > (1LL << 30) || !device.wgmma || !limits::gemm_sm90_layer_norm_fits(N, K)) return false;
  // The flags' counts: the launch in the top bits, the block's tile below.
  if (launch < 0 || launch >= (1 << (31 - kTileBits)) || (M + kTileM - 1) / kTileM >= (1LL << kTileBits))
    return false;
  if (!aligned(x, 16) || !aligned(w, 16) || !aligned(skip, 16) || !aligned(y, 16) || (bias && !aligned(bias, 8)) ||
      !aligned(gammas, 8) || !aligned(betas, 8) || !aligned(exchange, 128))
    return false;
  const int blocks = N / kTileN;
  const int resident = resident_blocks.load();
  if (resident < blocks) return false;
  CUtensorMap x_map, w_map, skip_map, y_map;
  if (!sm90::tile_map(&x_map, x, M, K, kTileM) || !sm90::tile_map(&w_map, w, N, K, kTileN) ||
      !sm90::tile_map(&skip_map, skip, M, N, kBox) || !sm90::tile_map(&y_map, y, M, N, kBox))
    return false;
  const long long row_tiles = (M + kTileM - 1) / kTileM;
  const dim3 grid(static_cast<unsigned>(std::min<long long>(row_tiles, resident / blocks) * blocks));
  unsigned* group_sync = static_cast<unsigned*>(exchange);
  float2* group_slots = reinterpret_cast<float2*>(static_cast<unsigned char*>(exchange) + resident * kSyncBytes);
  const auto kernel = half_sums ? gemm_sm90_layer_norm_kernel<true> : gemm_sm90_layer_norm_kernel<false>;
  gpu_launch_cooperative(kernel, grid, dim3(kThreads), kSharedBytes, stream, x_map, w_map, skip_map, y_map, bias,
                         gammas, betas, alpha, eps, static_cast<int>(M), N, K, launch, group_sync, group_slots);
  GPU_CHECK_LAUNCH();
  return true;
}

#else

int gemm_sm90_layer_norm_prepare(const DeviceInfo&) { return 0; }
size_t gemm_sm90_layer_norm_exchange_bytes() { return 0; }
bool gemm_sm90_layer_norm_reset(hipStream_t, void*) { return false; }
bool gemm_sm90_layer_norm(hipStream_t, const DeviceInfo&, long long, int, int, const void*, const void*,
                          const float*, const void*, const float*, const float*, float, float, void*, void*,
                          int, bool) {
  return false;
}

#endif

}  // namespace lc0rocm
