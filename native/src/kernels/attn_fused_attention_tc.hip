// Fused attention on tensor cores (NVIDIA, fp16 storage): the same op as
// attn_fused_attention.hip (bias add of the Q|K|V projection, Q.K^T /
// sqrt(depth) + smolgen, softmax over the keys, . V, heads side by side) with
// both products as 16x16x16 wmma tiles (half inputs, float accumulation).
//
// An item is one (position, head); a block of 64 / 16 = 4 warps, each owning
// 16 query rows, works through items (as many blocks as fit on the device,
// striding over the items). Q, K, V of an item go to shared memory as half
// (bias added in float, then rounded, as lc0's own fp16 path does); then the
// next item's Q|K|V loads are issued, to arrive while this item's products
// run. A warp's 16 x 64 scores land in its float scratch; softmax (a lane
// pair per row, so the warp's 16 rows reduce side by side with one shuffle
// each, with smolgen's logits fetched to registers before the products)
// writes half probabilities over them, which feed the P.V tiles; the output
// goes back through the same scratch to 16-byte global stores. 32.5 KB of
// shared memory per block at depth 32. Design and measurements:
// native/docs/ATTENTION_FUSED.md.
//
// AMD: nvcuda::wmma does not exist there (rocWMMA is another header and
// API): under hipcc the launchers return false, and AMD's matrix
// instructions run attn_fused_attention_amd.hip where the plan takes it
// (plan/attention_plan.cpp); elsewhere the scalar kernel
// (attn_fused_attention.hip) runs. Likewise for float storage and head
// depths these kernels do not take.
#include "../attention_device.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <mma.h>

#include "async_copy.h"
#include "attn_mma_head.h"
#include "mma_tile.h"

#include <algorithm>
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace wmma = nvcuda::wmma;

constexpr int kTile = 16;                   // wmma tile edge
constexpr int kTcWarps = 64 / kTile;        // one warp per 16 query rows
constexpr int kPadHalf = 8;                 // 16 bytes of padding per half row
constexpr int kPadFloat = 4;                // 16 bytes of padding per float row
constexpr int kScorePitch = 64 + kPadFloat; // float scratch row (scores, then output)

template <int kDepth>
__host__ __device__ constexpr int tc_pitch() {
  return kDepth + kPadHalf;
}

// Q, K, V [3][64][pitch] half, then one [16][kScorePitch] float scratch per
// warp: the scores, overwritten in place by the half probabilities (same
// byte pitch, so kProbPitch = 2 * kScorePitch halves), then the output.
constexpr int kProbPitch = 2 * kScorePitch;
template <int kDepth>
constexpr size_t tc_shared_bytes() {
  return sizeof(__half) * 3 * 64 * tc_pitch<kDepth>() +
         sizeof(float) * kTcWarps * kTile * kScorePitch;
}

// 8 halves (16 bytes) as a vector.
union Half8 {
  uint4 raw;
  __half h[8];
};

template <int kDepth>
__global__ void fused_attention_tc_kernel(__half* out, const __half* qkv, int width, const float* bias,
                                          const __half* smolgen, int items, int heads, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
#if defined(LC0ROCM_WMMA_AVAILABLE)
  extern __shared__ __align__(128) unsigned char shared_raw[];
  constexpr int P = tc_pitch<kDepth>();
  constexpr int kDepthTiles = kDepth / kTile;
  __half* qs = reinterpret_cast<__half*>(shared_raw);  // [64][P]
  __half* ks = qs + 64 * P;
  __half* vs = ks + 64 * P;
  const int lanes = warpSize;
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  float* scores = reinterpret_cast<float*>(vs + 64 * P) + warp * kTile * kScorePitch;  // [16][68]
  __half* probs = reinterpret_cast<__half*>(scores);  // [16][136], row r over score row r

  const int d_model = heads * kDepth;
  const int row0 = warp * kTile;
  // Softmax layout: lanes 2r and 2r+1 own row r of the warp's 16, columns
  // [32 * half, 32 * half + 32) (launched with 32-lane warps only).
  const int my_row = lane / 2, my_col0 = (lane % 2) * 32;
  const bool has_gen = smolgen != nullptr;

  // A thread's share of an item's Q|K|V: 16-byte loads, all in flight at
  // once (6 per thread at depth 32). The next item's are issued before this
  // item's products, so they arrive while the tensor cores work.
  constexpr int kVecs = kDepth / 8;  // per row and matrix
  constexpr int kTotal = 3 * 64 * kVecs;
  constexpr int kThreads = kTcWarps * 32;
  constexpr int kPerThread = (kTotal + kThreads - 1) / kThreads;
  Half8 in[kPerThread];
  auto issue_loads = [&](int item) {
    const int n = item / heads, h = item - n * heads;
    const __half* rows = qkv + static_cast<long long>(n) * 64 * width;
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kThreads;
      if (i < kTotal) {
        const int m = i / (64 * kVecs);
        const int rest = i - m * 64 * kVecs;
        const int r = rest / kVecs, v = rest - r * kVecs;
        in[u].raw = *reinterpret_cast<const uint4*>(rows + static_cast<long long>(r) * width +
                                                    m * d_model + h * kDepth + v * 8);
      }
    }
  };

  int nh = blockIdx.x;  // item = position * heads + head; blocks stride over the items
  if (nh >= items) return;
  issue_loads(nh);
  for (; nh < items; nh += gridDim.x) {
    const int n = nh / heads, h = nh - n * heads;

    // Q, K, V + bias -> shared (bias added in float from two float4 loads per
    // 8 values).
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kThreads;
      if (i < kTotal) {
        const int m = i / (64 * kVecs);
        const int rest = i - m * 64 * kVecs;
        const int r = rest / kVecs, v = rest - r * kVecs;
        const int col = m * d_model + h * kDepth + v * 8;
        const float4 b0 = *reinterpret_cast<const float4*>(bias + col);
        const float4 b1 = *reinterpret_cast<const float4*>(bias + col + 4);
        const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int k = 0; k < 8; ++k) in[u].h[k] = __float2half(__half2float(in[u].h[k]) + b[k]);
        *reinterpret_cast<uint4*>(qs + m * 64 * P + r * P + v * 8) = in[u].raw;
      }
    }
    __syncthreads();

    // Smolgen's logits of this lane's softmax row (64 contiguous bytes per
    // lane, the warp's 16 rows in one 2 KB sweep), then the next item's
    // Q|K|V: both in flight during the products.
    uint4 g[4];
    if (has_gen) {
      const uint4* gen = reinterpret_cast<const uint4*>(smolgen + static_cast<long long>(nh) * 4096 +
                                                        (row0 + my_row) * 64 + my_col0);
#pragma unroll
      for (int j = 0; j < 4; ++j) g[j] = gen[j];
    }
    if (nh + static_cast<int>(gridDim.x) < items) issue_loads(nh + gridDim.x);

    // scores [16][64] = Q rows . K^T
#pragma unroll
    for (int kt = 0; kt < 64 / kTile; ++kt) {
      wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int d = 0; d < kDepth; d += kTile) {
        wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::col_major> b;
        wmma::load_matrix_sync(a, qs + row0 * P + d, P);
        wmma::load_matrix_sync(b, ks + kt * kTile * P + d, P);  // K^T: K row-major is K^T col-major
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(scores + kt * kTile, acc, kScorePitch, wmma::mem_row_major);
    }
    __syncwarp();

    // softmax(scores * scale + smolgen) -> probs (half), written over the
    // row's own scores. A row is two lanes' (one shuffle per reduction, the
    // 16 rows side by side); both have read the row before either writes it.
    float s[32];
    {
      const float* src = scores + my_row * kScorePitch + my_col0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 raw = *reinterpret_cast<const float4*>(src + 4 * j);
        s[4 * j] = raw.x * scale;
        s[4 * j + 1] = raw.y * scale;
        s[4 * j + 2] = raw.z * scale;
        s[4 * j + 3] = raw.w * scale;
      }
    }
    if (has_gen) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const Half8 gv{g[j]};
#pragma unroll
        for (int k = 0; k < 8; ++k) s[8 * j + k] += __half2float(gv.h[k]);
      }
    }
    float m = s[0];
#pragma unroll
    for (int k = 1; k < 32; ++k) m = fmaxf(m, s[k]);
    m = fmaxf(m, gpu_shfl_xor(m, 1));
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      s[k] = expf(s[k] - m);
      sum += s[k];
    }
    sum += gpu_shfl_xor(sum, 1);
    const float inv = 1.0f / sum;
    __syncwarp();
    {
      uint4* dst = reinterpret_cast<uint4*>(probs + my_row * kProbPitch + my_col0);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        Half8 pv;
#pragma unroll
        for (int k = 0; k < 8; ++k) pv.h[k] = __float2half(s[8 * j + k] * inv);
        dst[j] = pv.raw;
      }
    }
    __syncwarp();

    // out [16][depth] = probs . V; every product is done before the results go
    // to the scratch (over the probabilities), then 16-byte global stores.
    wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> o[kDepthTiles];
#pragma unroll
    for (int dt = 0; dt < kDepthTiles; ++dt) {
      wmma::fill_fragment(o[dt], 0.0f);
#pragma unroll
      for (int k = 0; k < 64; k += kTile) {
        wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::row_major> b;
        wmma::load_matrix_sync(a, probs + k, kProbPitch);
        wmma::load_matrix_sync(b, vs + k * P + dt * kTile, P);
        wmma::mma_sync(o[dt], a, b, o[dt]);
      }
    }
    __syncwarp();
#pragma unroll
    for (int dt = 0; dt < kDepthTiles; ++dt)
      wmma::store_matrix_sync(scores + dt * kTile, o[dt], kScorePitch, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < kTile * kVecs; i += lanes) {
      const int r = i / kVecs, v = i - r * kVecs;
      Half8 res;
#pragma unroll
      for (int k = 0; k < 8; ++k) res.h[k] = __float2half(scores[r * kScorePitch + v * 8 + k]);
      *reinterpret_cast<uint4*>(out + static_cast<long long>(n * 64 + row0 + r) * d_model +
                                h * kDepth + v * 8) = res.raw;
    }
    __syncthreads();  // every warp is done with this item's K and V before the next overwrites them
  }
#endif
}

// The same op as fused_attention_tc_kernel on mma.sync tiles whose fragments
// stay in registers (sm_80 on, head depth 16 or 32; an item's step is
// attend_rows, attn_mma_head.h): the scores never go through shared
// memory, softmax works on the accumulator fragments (a row's values sit in
// the 4 lanes of a quad: two shuffles per reduction),
// the probabilities become the A fragments of P.V as they are, and every
// tile comes from shared memory by ldmatrix. An item's Q|K|V and smolgen
// logits move to shared memory by cp.async (no registers), kMmaStages - 1
// items ahead of the one being computed, with the head's Q and V biases
// (float) after them in the stage: Q's is added to the Q fragments (float,
// rounded to half); K's adds q.b_k to every score of a query row, which
// softmax cancels, so it is left out; V's adds b_v to every output row,
// because each row of probabilities sums to one, so it is added to the
// output.
// The output goes through the warp's own Q rows to 16-byte stores.
// native/docs/ATTENTION_FUSED.md, "mma.sync version".
//
// Rows lie unpadded in shared memory (Q|K|V: kDepth halves, the logits:
// 64), with 16-byte piece p of row r at p ^ turn(r) (`swizzled`, attn_mma_head.h): the 8 rows one
// ldmatrix matrix reads then fall in 8 different bank groups. Why not
// padding (the first version): 16 bytes a row took a stage to 24.6 KB, so
// a multiprocessor held 4 blocks, and ncu found the kernel short of loads
// in flight (t82 b512: DRAM 67.5 %, 25 % occupancy; native/docs/ATTENTION_FUSED.md).
// Items in shared memory: the current one + 1 ahead (a third stage, two
// ahead, measured no faster: 136 registers, 3 blocks per multiprocessor).
constexpr int kMmaStages = 2;

// A stage: the item's Q|K|V rows, its smolgen logits, then its head's Q and
// V biases (float, 2 x kDepth), which come with the item by cp.async: read
// from global memory after the stage's barrier, their latency held every
// warp of the item (H200, kernel time a pass: t82 b512 1,369 -> 1,300 us,
// bt4 b512 1,858 -> 1,684; native/docs/ATTENTION_FUSED.md).
template <int kDepth>
__host__ __device__ constexpr int mma_bias_halves() {
  return 2 * kDepth * static_cast<int>(sizeof(float) / sizeof(__half));
}
template <int kDepth>
__host__ __device__ constexpr int mma_stage_halves() {
  return 3 * 64 * kDepth + 64 * 64 + mma_bias_halves<kDepth>();
}

template <int kDepth>
constexpr size_t mma_shared_bytes() {
  return sizeof(__half) * kMmaStages * mma_stage_halves<kDepth>();
}

// a + b on a pair of halves in float, rounded back to half.
__device__ __forceinline__ uint32_t add_pair(uint32_t a, float2 b) {
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&a));
  const __half2 r = __floats2half2_rn(f.x + b.x, f.y + b.y);
  return *reinterpret_cast<const uint32_t*>(&r);
}

// Five blocks a multiprocessor: the unpadded stages (41,472 bytes at depth
// 32, the biases' 512 included) fit five, and so must the registers (at
// most 102 a thread).
constexpr int kMmaBlocksPerMultiprocessor = 5;

template <int kDepth>
__global__ void __launch_bounds__(kTcWarps * 32, kMmaBlocksPerMultiprocessor)
    fused_attention_mma_kernel(__half* out, const __half* qkv, int width, const float* bias, const __half* smolgen,
                               int items, int heads, float scale) {
  static_assert(kDepth == 16 || kDepth == 32, "the K fragment loads assume 2 or 4 depth blocks of 8");
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
#if defined(LC0ROCM_MMA_AVAILABLE)
  extern __shared__ __align__(128) unsigned char shared_raw[];
  constexpr int kBlocks = kDepth / 8;        // 16-byte depth blocks per row
  constexpr int kSteps = kDepth / 16;        // k steps of Q.K^T
  constexpr int kQkvVecs = 3 * 64 * kBlocks; // 16-byte pieces of an item's Q|K|V
  constexpr int kGenVecs = 64 * 8;           // and of its smolgen logits
  constexpr int kBiasVecs = mma_bias_halves<kDepth>() / 8;  // and of its head's Q and V biases
  static_assert(kBiasVecs <= kTcWarps * 32, "one bias piece a thread at most");
  static_assert(mma_stage_halves<kDepth>() * sizeof(__half) % 128 == 0, "stages on 128-byte lines (the swizzle)");
  constexpr int kThreads = kTcWarps * 32;
  __half* stages = reinterpret_cast<__half*>(shared_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int quad_row = lane / 4, quad_col = 2 * (lane % 4);  // fragment layout, mma_tile.h
  const int row0 = warp * kTile;
  const int d_model = heads * kDepth;
  const bool has_gen = smolgen != nullptr;
  const float score_scale = scale * kLog2e;  // softmax in base 2 (attend_rows)
  // ldmatrix addresses: lane l names row l % 8 of matrix l / 8.
  const int ld_row = lane % 8, ld_matrix = lane / 8;

  // One copy group per item (empty past the first), so that waiting for
  // "all but kMmaStages - 1 groups" always means "this item's".
  auto issue = [&](int step, int item) {
    if (item >= 0) {
      __half* s = stages + (step % kMmaStages) * mma_stage_halves<kDepth>();
      const int n = item / heads, h = item - n * heads;
      const __half* rows = qkv + static_cast<long long>(n) * 64 * width + h * kDepth;
#pragma unroll
      for (int u = 0; u < (kQkvVecs + kThreads - 1) / kThreads; ++u) {
        const int i = threadIdx.x + u * kThreads;
        if (i < kQkvVecs) {
          const int m = i / (64 * kBlocks), rest = i - m * 64 * kBlocks;
          const int r = rest / kBlocks, v = rest - r * kBlocks;
          copy16_async(s + m * 64 * kDepth + swizzled<kBlocks>(r, v),
                       rows + static_cast<long long>(r) * width + (m * d_model + v * 8));
        }
      }
      if (has_gen) {
        const __half* gen = smolgen + static_cast<long long>(item) * 4096;
        __half* gs = s + 3 * 64 * kDepth;
#pragma unroll
        for (int u = 0; u < kGenVecs / kThreads; ++u) {
          const int i = threadIdx.x + u * kThreads;
          copy16_async(gs + swizzled<kGenPieces>(i / 8, i % 8), gen + i * 8);
        }
      }
      // Q's bias, then V's: floats [0, kDepth) and [kDepth, 2 kDepth) after the
      // logits, by the block's last threads (placed here, ptxas spills nothing).
      const int bias_vec = threadIdx.x - (kThreads - kBiasVecs);
      if (bias_vec >= 0) {
        const int half_vecs = kBiasVecs / 2, v = bias_vec % half_vecs;
        const float* src = bias + (bias_vec < half_vecs ? 0 : 2 * d_model) + h * kDepth + v * 4;
        copy16_async(s + 3 * 64 * kDepth + 64 * 64 + bias_vec * 8, src);
      }
    }
    commit_copies();
  };

  // The blocks stride down from the last item: the smolgen logits (or the
  // Q|K|V rows) written just before this launch are read while the last of
  // them are still in L2, and the output product after it, which reads the
  // first positions first, finds those there (H100: the kernel 2.5-5 %
  // faster on bt4 at batch 256-512, 3 % on t82 at 512; BENCHMARKS.md, "The
  // attention from the last item").
  const int first = items - 1 - static_cast<int>(blockIdx.x), stride = gridDim.x;
  if (first < 0) return;
  for (int step = 0; step < kMmaStages - 1; ++step) issue(step, first - step * stride);
  for (int step = 0;; ++step) {
    const int item = first - step * stride;
    if (item < 0) break;
    // The stage this fills was last read by the step before (which ended
    // in a barrier).
    issue(step + kMmaStages - 1, item - (kMmaStages - 1) * stride);
    wait_copies(kMmaStages - 1);
    __syncthreads();
    __half* qs = stages + (step % kMmaStages) * mma_stage_halves<kDepth>();
    __half* ks = qs + 64 * kDepth;
    __half* vs = ks + 64 * kDepth;
    const __half* gs = vs + 64 * kDepth;
    const int n = item / heads, h = item - n * heads;
    const float* q_bias = reinterpret_cast<const float*>(gs + 64 * 64);
    const float* v_bias = q_bias + kDepth;

    // The Q rows + b_q as A fragments: register qa[kk][q] holds depth columns
    // 16kk + 8 (q / 2) + quad_col, + 1.
    uint32_t qa[kSteps][4];
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      ldmatrix_x4(qa[kk], qs + swizzled<kBlocks>(row0 + ld_row + 8 * (ld_matrix % 2), 2 * kk + ld_matrix / 2));
#pragma unroll
      for (int q = 0; q < 4; ++q)
        qa[kk][q] = add_pair(qa[kk][q], *reinterpret_cast<const float2*>(q_bias + 16 * kk + 8 * (q / 2) + quad_col));
    }
    // out [16][depth] = softmax(scores * scale + smolgen) . V + b_v (attn_mma_head.h).
    float o[kBlocks][4];
    attend_rows<kDepth>(o, qa, ks, vs, gs, has_gen, row0, {quad_col, ld_row, ld_matrix}, v_bias, score_scale);

    // The output, rounded to half, over the warp's own Q rows (only this warp
    // reads them), then 16-byte stores of whole rows.
    __syncwarp();  // every lane's Q fragments are loaded before they are overwritten
#pragma unroll
    for (int dt = 0; dt < kBlocks; ++dt) {
      *reinterpret_cast<__half2*>(qs + swizzled<kBlocks>(row0 + quad_row, dt) + quad_col) =
          __floats2half2_rn(o[dt][0], o[dt][1]);
      *reinterpret_cast<__half2*>(qs + swizzled<kBlocks>(row0 + quad_row + 8, dt) + quad_col) =
          __floats2half2_rn(o[dt][2], o[dt][3]);
    }
    __syncwarp();
#pragma unroll
    for (int u = 0; u < kTile * kBlocks / 32; ++u) {
      const int i = lane + 32 * u;
      const int r = i / kBlocks, v = i - r * kBlocks;
      *reinterpret_cast<uint4*>(out + static_cast<long long>(n * 64 + row0 + r) * d_model + h * kDepth + v * 8) =
          *reinterpret_cast<const uint4*>(qs + swizzled<kBlocks>(row0 + r, v));
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  wait_copies(0);  // no copy outlives the block (the groups left are empty)
#endif
}

// Blocks of `kernel` that fit on the device at once (multiprocessors x
// resident blocks): the kernels' blocks stride over the items, so each
// overlaps its next items' loads with the current one's products. 0 when
// the runtime cannot say. Asked per launch: launches are recorded once into
// the stream's graphs.
template <typename Kernel>
int resident_blocks(Kernel kernel, size_t shared_bytes, int multiprocessors) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kTcWarps * 32, shared_bytes) != cudaSuccess)
    return 0;
  return std::max(0, per_sm * multiprocessors);
}

template <typename Kernel>
void launch_persistent(Kernel kernel, size_t shared_bytes, __half* out, const __half* qkv, int qkv_stride,
                       const float* bias, const __half* smolgen, int batch, int heads, int depth, int warp_size,
                       int multiprocessors, hipStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(depth));
  const int items = batch * heads;
  const int resident = resident_blocks(kernel, shared_bytes, multiprocessors);
  const int grid = resident > 0 ? std::min(items, resident) : items;
  gpu_launch(kernel, grid, kTcWarps * warp_size, shared_bytes, stream, out, qkv, qkv_stride, bias, smolgen, items,
             heads, scale);
  check_launch("fused_attention_tc");
}

template <int kDepth>
void launch_wmma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
                 int heads, int warp_size, int multiprocessors, hipStream_t stream) {
  launch_persistent(fused_attention_tc_kernel<kDepth>, tc_shared_bytes<kDepth>(), out, qkv, qkv_stride, bias,
                    smolgen, batch, heads, kDepth, warp_size, multiprocessors, stream);
}

template <int kDepth>
void launch_mma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
                int heads, int warp_size, int multiprocessors, hipStream_t stream) {
  static_assert(mma_shared_bytes<kDepth>() <= 48 * 1024, "within the default limit: no opt-in inside a capture");
  launch_persistent(fused_attention_mma_kernel<kDepth>, mma_shared_bytes<kDepth>(), out, qkv, qkv_stride, bias,
                    smolgen, batch, heads, kDepth, warp_size, multiprocessors, stream);
}

namespace {
// What both kernels take beyond their depths: the softmax gives each row
// to a lane pair (wmma) or a quad (mma), so 32-lane warps (NVIDIA's);
// Q|K|V rows and the pointers in 16-byte pieces.
bool operands_fit(const __half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                  int heads, int depth, const DeviceInfo& device) {
  check_warp_size(device.warp_size);
  return device.warp_size == 32 && qkv_stride >= 3 * heads * depth && qkv_stride % 8 == 0 && aligned16(out) &&
         aligned16(qkv) && aligned16(bias) && (smolgen == nullptr || aligned16(smolgen));
}
}  // namespace

bool fused_attention_mma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                         int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  if (!operands_fit(out, qkv, qkv_stride, bias, smolgen, heads, depth, device) ||
      !limits::mma_attention_fits(device, depth))
    return false;
  const int sms = device.multiprocessors;
  if (depth == 16) launch_mma<16>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.warp_size, sms, stream);
  else launch_mma<32>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.warp_size, sms, stream);
  return true;
}

bool fused_attention_wmma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                          int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  if (!operands_fit(out, qkv, qkv_stride, bias, smolgen, heads, depth, device) ||
      !limits::wmma_attention_fits(device, depth))
    return false;
  const int sms = device.multiprocessors, lanes = device.warp_size;
  switch (depth) {
    case 16: launch_wmma<16>(out, qkv, qkv_stride, bias, smolgen, batch, heads, lanes, sms, stream); return true;
    case 32: launch_wmma<32>(out, qkv, qkv_stride, bias, smolgen, batch, heads, lanes, sms, stream); return true;
    default: launch_wmma<48>(out, qkv, qkv_stride, bias, smolgen, batch, heads, lanes, sms, stream); return true;
  }
}

#else  // AMD: no wmma here (see the header comment): attn_fused_attention_amd.hip has its matrix instructions.

bool fused_attention_mma(__half*, const __half*, int, const float*, const __half*, int, int, int, const DeviceInfo&,
                         hipStream_t) {
  return false;
}
bool fused_attention_wmma(__half*, const __half*, int, const float*, const __half*, int, int, int, const DeviceInfo&,
                          hipStream_t) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
