// attn_qkv_attention_sm90: an encoder layer's Q|K|V product and its whole
// attention in one launch on Hopper (wgmma fed by TMA), so Q, K and V never
// go to memory: out [batch*64][heads*32] = softmax(Q.K^T / sqrt(32) +
// smolgen) . V with Q|K|V = x . W^T + b. Design and measurements:
// native/docs/QKV_ATTENTION_SM90.md.
//
// Why: at large batches the GPU runs at its power cap, where a pass's speed
// is its energy, and the Q|K|V product wrote 3 x d_model halves a row that
// the fused attention read back from DRAM (bt4 at batch 512: ~400 MB a
// layer, 6 GB a pass). Here only smolgen's logits come in and the output
// goes out.
//
// A tile is 128 rows (two positions) by 192 columns: Q, K and V of a pair of
// heads, W's rows fetched as three 64-row boxes (the pair's Q rows, its K
// rows, its V rows). Persistent blocks of three warpgroups, as gemm_sm90's
// cooperative schedule: one producer thread fills a ring of stages by TMA,
// and after each tile's stages that tile's smolgen logits (both positions,
// both heads, 32 KB) into a buffer of their own; each consumer warpgroup
// runs one position's 64 rows (m64n192k16; summed in half by default, as
// lc0's cuda backend's products, or in float) and then, in its epilogue,
// that position's attention for both heads:
// - K and V go to shared memory as half (64-byte rows, `swizzled`);
// - Q, its bias added, goes straight from the accumulators into mma.sync A
//   fragments: a warp's 16 rows of the wgmma D fragment lie as mma.sync's
//   do, so no shuffle;
// - attend_scores for both heads (attn_mma_head.h, the mma.sync
//   attention's own step, first half); then the next tile's first kAhead
//   k-slices, which run beside attend_finish (softmax and p . V);
// - the output of both heads, 64 rows x 64 columns, takes K's place as a
//   128-byte swizzled box and leaves by one TMA store.
//
// Other devices and builds: a stub that returns false; the caller runs the
// product and the fused attention.
#include "../attention_kernels.h"
#include "aligned.h"

#if defined(LC0ROCM_SM90A_BUILD)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "attn_mma_head.h"
#include "tensor_map.h"
#include "wgmma_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_SM90A_BUILD)

namespace qkv_sm90 {

constexpr int kDepth = 32;                      // head depth (t82's and bt4's)
constexpr int kPairHeads = 2;                   // heads a tile
constexpr int kPartRows = kPairHeads * kDepth;  // 64: W's rows of the pair's Q (or K, or V)
constexpr int kTileM = 128;                     // two positions, one a consumer
constexpr int kTileN = 3 * kPartRows;           // 192: Q, K, V of the pair
constexpr int kTileK = 64;                      // one 128-byte swizzle row of halves
constexpr int kStages = 4;
// A tile's first k-slices, issued during the tile before's attention (see
// the consumer). Fewer than kStages: they are handed back only once the
// tile's loop has issued the one after them, whose fill needs the stage of
// the one kStages before it (with kStages ahead, the first of them, still
// held: a deadlock). A constant: wgmma behind a branch or a loop count ptxas
// cannot prove uniform makes it serialize or wait for every wgmma.
constexpr int kAhead = 2;
constexpr int kConsumers = 2;
constexpr int kThreads = (1 + kConsumers) * 128;
constexpr unsigned kStageABytes = kTileM * kTileK * sizeof(__half);   // 16 KB
constexpr unsigned kPartBytes = kPartRows * kTileK * sizeof(__half);  // 8 KB: one of W's boxes
constexpr unsigned kStageBBytes = kTileN * kTileK * sizeof(__half);   // 24 KB: three of W's boxes
constexpr int kHeadHalves = 64 * kDepth;                              // a head's K (or V) of a position
constexpr unsigned kKeysBytes = kPairHeads * kHeadHalves * sizeof(__half);  // 8 KB: K, later the output box
constexpr unsigned kConsumerBytes = 2 * kKeysBytes;                         // K, then V
constexpr int kLogitsHalves = 64 * 64;                                      // a head's logits of a position
constexpr unsigned kPositionLogitsBytes = kPairHeads * kLogitsHalves * sizeof(__half);  // 16 KB
// The stages, 1,024-byte aligned for the swizzle (hence the slack), then
// each consumer's K and V, the logits of both positions, and the barriers:
// 230,480 bytes of the 232,448 a block may have.
constexpr size_t kSharedBytes = 1024 + kStages * (kStageABytes + kStageBBytes) + kConsumers * kConsumerBytes +
                                kConsumers * kPositionLogitsBytes + (2 * kStages + 2) * sizeof(uint64_t);
static_assert(kTileK == sm90::kBoxCols && kPartRows == sm90::kBoxCols, "W's boxes and the output box: tensor_map.h");
static_assert(kKeysBytes == 64 * sm90::kBoxCols * sizeof(__half), "the output box, 64 rows x both heads, is K's size");
static_assert(kTileM / kConsumers == 64, "a consumer's rows are one position's");
static_assert(kStageBBytes == 3 * kPartBytes, "a stage's W: the pair's Q, K and V boxes");

// kHalfSums: the Q|K|V product sums in half (wgmma .f16 accumulators, as
// lc0's cuda backend's cublasHgemm); K and V go to shared memory as they
// are, Q's bias is added in float.
template <bool kHalfSums>
__global__ void __launch_bounds__(kThreads, 1)
    qkv_attention_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                         const __grid_constant__ CUtensorMap logits_map, const __grid_constant__ CUtensorMap out_map,
                         const float* bias, int M, int K, int heads, float scale, int has_gen) {
  // nvcc -arch=sm_90a also emits compute_90 PTX, which has no wgmma: the body
  // is empty there (device.wgmma never lets that code run).
#if defined(LC0ROCM_WGMMA_AVAILABLE)
  using namespace wgmma;
  extern __shared__ unsigned char shared_raw[];
  unsigned char* base = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  __half* stage_x = reinterpret_cast<__half*>(base);
  __half* stage_w = reinterpret_cast<__half*>(base + kStages * kStageABytes);
  unsigned char* consumer_area = base + kStages * (kStageABytes + kStageBBytes);
  __half* logits = reinterpret_cast<__half*>(consumer_area + kConsumers * kConsumerBytes);
  uint64_t* full = reinterpret_cast<uint64_t*>(reinterpret_cast<unsigned char*>(logits) +
                                               kConsumers * kPositionLogitsBytes);
  uint64_t* empty = full + kStages;
  uint64_t* logits_full = empty + kStages;
  uint64_t* logits_empty = logits_full + 1;
  constexpr int kLogitsReaders = kConsumers * 4;  // the consumers' warps, each done with its rows

  const int warpgroup = threadIdx.x / 128;
  const int k_tiles = K / kTileK;
  const int pairs = heads / kPairHeads;
  const int d_model = heads * kDepth;
  const int row_tiles = (M + kTileM - 1) / kTileM;
  const int tiles = row_tiles * pairs;
  // Tile t: the pair t % pairs of the row tile counted from the last, as
  // gemm_sm90 (the logits were written just before, their last in L2).
  auto tile_row = [&](int t) { return (row_tiles - 1 - t / pairs) * kTileM; };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      barrier_init(&full[s], 1);            // the producer's arrival, with the bytes
      barrier_init(&empty[s], kConsumers);  // both consumers
    }
    barrier_init(logits_full, 1);
    barrier_init(logits_empty, kLogitsReaders);
    barrier_init_fence();
  }
  __syncthreads();
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // x and the logits are prior kernels' outputs

  if (warpgroup == 0) {
    registers_decrease<40>();  // the consumers take them: their next tile's products run beside the attention
    if (threadIdx.x == 0) {
      int seq = 0, i = 0;
      // Fill seq: k-slice kt of the rows m0 and the pair's W.
      auto fill = [&](int m0, int pair, int kt) {
        const int s = seq % kStages;
        if (seq >= kStages) barrier_wait(&empty[s], ((seq / kStages) - 1) & 1);
        barrier_arrive_expect_bytes(&full[s], kStageABytes + kStageBBytes);
        tma_load_2d(stage_x + s * (kStageABytes / sizeof(__half)), &x_map, kt * kTileK, m0, &full[s]);
        __half* ws = stage_w + s * (kStageBBytes / sizeof(__half));
#pragma unroll
        for (int part = 0; part < 3; ++part)  // Q's rows of the pair, K's, V's
          tma_load_2d(ws + part * (kPartBytes / sizeof(__half)), &w_map, kt * kTileK,
                      part * d_model + pair * kPartRows, &full[s]);
        ++seq;
      };
      for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++i) {
        const int m0 = tile_row(t), pair = t % pairs;
        for (int kt = 0; kt < k_tiles; ++kt) fill(m0, pair, kt);
        if (has_gen) {
          // One buffer: the tile before's epilogues are done with it (they
          // ran before this tile's last stages could be filled, so this wait
          // does not hold the ring).
          if (i > 0) barrier_wait(logits_empty, (i - 1) & 1);
          barrier_arrive_expect_bytes(logits_full, kConsumers * kPositionLogitsBytes);
          for (int c = 0; c < kConsumers; ++c) {  // past the last position: zeros
            const int position = m0 / 64 + c;
            tma_load_2d(logits + c * (kPositionLogitsBytes / sizeof(__half)), &logits_map, 0,
                        (position * heads + pair * kPairHeads) * 64, logits_full);
          }
        }
      }
      // The consumers issue kAhead k-slices during the last tile's
      // attention too (one shape for every tile): any rows will do.
      for (int kt = 0; kt < kAhead; ++kt) fill(tile_row(blockIdx.x), blockIdx.x % pairs, kt);
    }
  } else {
    registers_increase<232>();
    const int consumer = warpgroup - 1;
    const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row = warp * 16 + g;  // of the position's 64; row % 8 == g
    const bool leader = threadIdx.x % 128 == 0;
    const FragmentLanes lanes = fragment_lanes(lane);
    const float score_scale = scale * kLog2e;  // softmax in base 2 (attend_scores)
    const int barrier = 1 + consumer;  // named barrier ids 1, 2 (0 is __syncthreads')
    __half* keys = reinterpret_cast<__half*>(consumer_area + consumer * kConsumerBytes);  // [head][64][32]
    __half* values = keys + kPairHeads * kHeadHalves;
    const unsigned box_address = shared_address(keys);  // the output box, in K's place
    const __half* my_logits = logits + consumer * (kPositionLogitsBytes / sizeof(__half));
    // The consumer's 64 x 192 over its 128 threads: floats, or half pairs.
    using Sum = std::conditional_t<kHalfSums, unsigned, float>;
    Sum acc[64 * kTileN / 128 / (kHalfSums ? 2 : 1)];
    int released = 0;  // fills handed back so far
    // The products of k-slice kt (fill seq) of the block's i-th tile.
    // The first (kt 0) starts the accumulators afresh.
    auto issue = [&](int seq, int kt) {
      const int s = seq % kStages;
      barrier_wait(&full[s], (seq / kStages) & 1);
      const __half* xs = stage_x + s * (kStageABytes / sizeof(__half)) + consumer * 64 * kTileK;
      const __half* ws = stage_w + s * (kStageBBytes / sizeof(__half));
      // The fence after the wait: ahead of it, ptxas serializes every wgmma.
      fence_accumulators(acc);
      wgmma_fence();
#pragma unroll
      for (int k = 0; k < kTileK / 16; ++k)
        wgmma_64x192x16(acc, operand_descriptor(xs + 16 * k), operand_descriptor(ws + 16 * k), kt > 0 || k > 0);
      wgmma_commit();
    };
#pragma unroll
    for (int kt = 0; kt < kAhead; ++kt) issue(kt, kt);  // the first tile's first k-slices
    int i = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++i) {
      const int m0 = tile_row(tile), pair = tile % pairs;
      int seq = i * k_tiles + kAhead;
      for (int kt = kAhead; kt < k_tiles; ++kt, ++seq) {
        issue(seq, kt);
        // The products of every fill before this one are done: their stages may be refilled.
        wgmma_wait<1>();
        fence_accumulators(acc);
        for (; released < seq; ++released)
          if (leader) barrier_arrive(&empty[released % kStages]);
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      for (; released < seq; ++released)
        if (leader) barrier_arrive(&empty[released % kStages]);

      // Elements r and r + 1 (r even) of the float layout, as half and as float.
      auto sum_half2 = [&](int r) {
        if constexpr (kHalfSums) return *reinterpret_cast<const __half2*>(&acc[r / 2]);
        else return __floats2half2_rn(acc[r], acc[r + 1]);
      };
      auto sum_float2 = [&](int r) {
        if constexpr (kHalfSums) return __half22float2(*reinterpret_cast<const __half2*>(&acc[r / 2]));
        else return make_float2(acc[r], acc[r + 1]);
      };
      // The epilogue. Accumulator block j (columns 8j .. 8j + 7, registers
      // 4j .. 4j + 3: rows `row` and row + 8 at columns 8j + 2t, + 1) is Q's
      // for j < 8, K's for 8-15, V's for 16-23; head hh's are 4hh .. 4hh + 3
      // of each part.
      if (leader) bulk_wait_read<0>();  // the tile before's output box (K's place) has left
      named_barrier_sync(barrier, 128);
#pragma unroll
      for (int hh = 0; hh < kPairHeads; ++hh)
#pragma unroll
        for (int b = 0; b < kDepth / 8; ++b) {
          const int jk = 8 + 4 * hh + b, jv = 16 + 4 * hh + b;
          __half* kh = keys + hh * kHeadHalves;
          __half* vh = values + hh * kHeadHalves;
          const int piece = swizzled<kDepth / 8>(row, b) + 2 * t;
          const int piece8 = swizzled<kDepth / 8>(row + 8, b) + 2 * t;
          *reinterpret_cast<__half2*>(kh + piece) = sum_half2(4 * jk);
          *reinterpret_cast<__half2*>(kh + piece8) = sum_half2(4 * jk + 2);
          *reinterpret_cast<__half2*>(vh + piece) = sum_half2(4 * jv);
          *reinterpret_cast<__half2*>(vh + piece8) = sum_half2(4 * jv + 2);
        }
      // Q + b_q as A fragments (attend_scores): qa[hh][kk][q] is depth columns
      // 16kk + 8 (q / 2) + 2t, + 1 of row g + 8 (q % 2): block 4hh + 2kk + q / 2.
      uint32_t qa[kPairHeads][kDepth / 16][4];
#pragma unroll
      for (int hh = 0; hh < kPairHeads; ++hh)
#pragma unroll
        for (int kk = 0; kk < kDepth / 16; ++kk)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const int j = 4 * hh + 2 * kk + q / 2, r = 4 * j + 2 * (q % 2);
            const float2 b = *reinterpret_cast<const float2*>(bias + pair * kPartRows + 8 * j + 2 * t);
            const float2 a = sum_float2(r);
            const __half2 v = __floats2half2_rn(a.x + b.x, a.y + b.y);
            qa[hh][kk][q] = *reinterpret_cast<const uint32_t*>(&v);
          }
      named_barrier_sync(barrier, 128);  // every warp's K and V rows are in place
      if (has_gen) barrier_wait(logits_full, i & 1);
      // Both heads' scores on the tensor cores first; then the next tile's
      // first k-slices (after the last tile, the producer's extra fills),
      // which run beside the softmax on the CUDA cores. (Issued before the
      // scores, the scores' mma.sync waited for them: run 91.)
      const HeadOperands pair_heads = {keys,         values,      my_logits,     bias + 2 * d_model + pair * kPartRows,
                                       kHeadHalves, kHeadHalves, kLogitsHalves, kDepth};
      float scores[kPairHeads][8][4];
      attend_scores<kDepth, kPairHeads>(scores, qa, pair_heads, has_gen, warp * 16, lanes, score_scale);
#pragma unroll
      for (int kt = 0; kt < kAhead; ++kt) issue((i + 1) * k_tiles + kt, kt);
      fence_accumulators(acc);
      float o[kPairHeads][kDepth / 8][4];
      attend_finish<kDepth, kPairHeads>(o, scores, pair_heads, lanes);
      if (has_gen) {
        __syncwarp();
        if (lane == 0) barrier_arrive(logits_empty);
      }
      named_barrier_sync(barrier, 128);  // every warp is done with K before the output takes its place
      // The output box [64 rows][head 0's 32 columns, head 1's], 128-byte
      // swizzled (16-byte piece c of row r at c ^ (r % 8)).
#pragma unroll
      for (int hh = 0; hh < kPairHeads; ++hh)
#pragma unroll
        for (int dt = 0; dt < kDepth / 8; ++dt) {
          const __half2 first = __floats2half2_rn(o[hh][dt][0], o[hh][dt][1]);
          const __half2 second = __floats2half2_rn(o[hh][dt][2], o[hh][dt][3]);
          const unsigned offset = static_cast<unsigned>(((hh * (kDepth / 8) + dt) ^ g) * 16 + 4 * t);
          store_shared_u32(box_address + row * 128 + offset, *reinterpret_cast<const unsigned*>(&first));
          store_shared_u32(box_address + (row + 8) * 128 + offset, *reinterpret_cast<const unsigned*>(&second));
        }
      fence_async_shared();
      named_barrier_sync(barrier, 128);
      if (leader) {
        tma_store_2d(&out_map, keys, pair * kPartRows, m0 + consumer * 64);
        bulk_commit();
      }
    }
    wgmma_wait<0>();              // the extra k-slices
    if (leader) bulk_wait_all();  // the output is written before the block leaves
  }
#endif
}

}  // namespace qkv_sm90

static_assert(qkv_sm90::kDepth == limits::kQkvDepth && qkv_sm90::kPairHeads == limits::kQkvPairHeads &&
                  qkv_sm90::kTileK == limits::kQkvTileK && qkv_sm90::kAhead == limits::kQkvAhead,
              "plan/limits.h's shapes");

bool qkv_attention_sm90_prepare(const DeviceInfo& device) {
  using namespace qkv_sm90;
  if (!device.wgmma || device.shared_per_block < kSharedBytes || !sm90::tensor_maps_available()) return false;
  for (const void* kernel : {reinterpret_cast<const void*>(&qkv_attention_kernel<false>),
                             reinterpret_cast<const void*>(&qkv_attention_kernel<true>)})
    if (hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSharedBytes)) !=
        hipSuccess) {
      (void)hipGetLastError();
      return false;
    }
  return true;
}

bool qkv_attention_sm90(hipStream_t stream, const DeviceInfo& device, __half* out, const __half* x, const __half* w,
                        int w_rows, const float* bias, const __half* smolgen, int batch, int heads, int depth,
                        int embedding, bool half_sums) {
  using namespace qkv_sm90;
  const long long M = 64LL * batch;
  if (!device.wgmma || batch < 1 || M > (1LL << 30) / heads ||
      !limits::qkv_attention_sm90_fits(heads, depth, embedding) ||
      w_rows < 3 * heads * depth)
    return false;
  if (!aligned(out, 16) || !aligned(x, 16) || !aligned(w, 16) || !aligned(bias, 8) ||
      (smolgen != nullptr && !aligned(smolgen, 16)))
    return false;
  CUtensorMap x_map, w_map, logits_map, out_map;
  const int d_model = heads * depth;
  if (!sm90::tile_map(&x_map, x, M, embedding, kTileM) || !sm90::tile_map(&w_map, w, w_rows, embedding, kPartRows) ||
      !sm90::tile_map(&out_map, out, M, d_model, 64))
    return false;
  // The logits as [batch * heads * 64][64], a pair of heads' rows a box
  // (without smolgen the map is never read: x's stands in).
  if (smolgen != nullptr ? !sm90::tile_map(&logits_map, smolgen, M * heads, 64, kPairHeads * 64)
                         : !sm90::tile_map(&logits_map, x, M, embedding, kTileM))
    return false;
  const long long tiles = (M + kTileM - 1) / kTileM * (heads / kPairHeads);
  const dim3 grid(static_cast<unsigned>(std::min<long long>(tiles, device.multiprocessors)));
  const auto kernel = half_sums ? qkv_attention_kernel<true> : qkv_attention_kernel<false>;
  gpu_launch(kernel, grid, dim3(kThreads), kSharedBytes, stream, x_map, w_map, logits_map, out_map, bias,
             static_cast<int>(M), embedding, heads, 1.0f / std::sqrt(static_cast<float>(depth)),
             smolgen != nullptr ? 1 : 0);
  check_launch("qkv_attention_sm90");
  return true;
}

#else

bool qkv_attention_sm90_prepare(const DeviceInfo&) { return false; }
bool qkv_attention_sm90(hipStream_t, const DeviceInfo&, __half*, const __half*, const __half*, int, const float*,
                        const __half*, int, int, int, int, bool) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
