// attn_mma_head.h - one (position, head)'s attention for a warp's 16 query
// rows on mma.sync fragments, from K, V and smolgen's logits in shared
// memory: the step the mma.sync attention (attn_fused_attention_tc.hip) and
// the Q|K|V product with its attention (attn_qkv_attention_sm90.hip) share,
// so both compute the same arithmetic. NVIDIA builds, sm_80 on.
#pragma once
#include <cstdint>

#include "../gpu_compat.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include "mma_tile.h"

namespace lc0rocm {
namespace attn {

// The half offset of 16-byte piece `piece` of row `row` in rows of kPieces
// pieces (2, 4 or 8: 32, 64 or 128 bytes): 8 / kPieces rows share a
// 128-byte line, so the piece is turned by the line's place in a run of
// kPieces lines (for 128-byte rows: TMA's 128-byte swizzle). The 8 rows one
// ldmatrix matrix reads then fall in 8 different bank groups. Shifts and
// masks, not division: the callers' rows are a lane's row plus multiples of
// 8, whose turn the compiler then sees is the lane's own (fewer registers
// for the unrolled loops' addresses).
template <int kPieces>
__device__ __forceinline__ int swizzled(int row, int piece) {
  static_assert(kPieces == 2 || kPieces == 4 || kPieces == 8, "rows of 32, 64 or 128 bytes");
  constexpr unsigned kRowsPerLine = 8 / kPieces, kShift = kRowsPerLine == 4 ? 2 : kRowsPerLine == 2 ? 1 : 0;
  const unsigned r = static_cast<unsigned>(row), turn = (r >> kShift) & (kPieces - 1);
  return static_cast<int>((r * kPieces + (static_cast<unsigned>(piece) ^ turn)) * 8);
}

constexpr int kGenPieces = 64 / 8;  // 16-byte pieces of a smolgen logits row
// Softmax in base 2: exp(s - max) = 2^(s log2 e - max log2 e).
constexpr float kLog2e = 1.4426950408889634f;

// 2^x (ex2.approx: 2 ulp; the probabilities are rounded to half after).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// A lane's places in the fragments: lane l = 4g + t holds columns 2t, 2t + 1
// (quad_col = 2t); for ldmatrix it names row l % 8 of matrix l / 8.
struct FragmentLanes {
  int quad_col, ld_row, ld_matrix;
};
__device__ __forceinline__ FragmentLanes fragment_lanes(int lane) { return {2 * (lane % 4), lane % 8, lane / 8}; }

// The heads one warp attends to at once (attend_scores, attend_finish): their K, V,
// logits and V bias, each head's `stride` elements after the one before.
struct HeadOperands {
  const __half* ks;
  const __half* vs;
  const __half* gs;
  const float* v_bias;
  int ks_stride, vs_stride, gs_stride, v_bias_stride;
};

// o [16][kDepth] = softmax(Q . K^T * scale + smolgen) . V + b_v for the
// warp's query rows row0 .. row0 + 15 of kHeads (position, head)s at once,
// each phase's steps interleaved over the heads (on its own that gained
// nothing, run 94: it is the shape that lets a caller put work between the
// two phases for all heads at once). Per head h:
// - qa[h]: the rows' Q (bias added, half) as A fragments; qa[h][kk][q]
//   holds depth columns 16kk + 8 (q / 2) + 2t, + 1 of rows g + 8 (q % 2)
//   (lane 4g + t);
// - ks, vs (HeadOperands): the head's K and V, [64][kDepth] half, rows
//   `swizzled`;
// - gs: its logits [64][64] half, rows `swizzled` (128 bytes), read where
//   has_gen;
// - v_bias: the head's V bias (kDepth floats): each row of probabilities
//   sums to one, so it is added to the output. (K's bias adds q.b_k to
//   every score of a query row, which softmax cancels: left out.)
// - row0: the warp's first query row; lanes: fragment_lanes(lane);
// - score_scale: 1 / sqrt(depth) times log2 e (softmax in base 2).
// o[h][dt] is the D fragment of depth columns [8dt, 8dt + 8): rows g
// (o[h][dt][0..1]) and g + 8 (o[h][dt][2..3]) at columns 8dt + 2t, + 1.
// Each head's arithmetic is the one-head version's, in the same order.
//
// In two phases, so that a caller can put other work between them:
// attend_scores (the tensor-core products Q . K^T and the logits, into acc)
// and attend_finish (softmax on the CUDA cores, then P . V).
template <int kDepth, int kHeads>
__device__ __forceinline__ void attend_scores(float (&acc)[kHeads][8][4], const uint32_t (&qa)[kHeads][kDepth / 16][4],
                                              const HeadOperands& heads, bool has_gen, int row0,
                                              const FragmentLanes& lanes, float score_scale) {
  static_assert(kDepth == 16 || kDepth == 32, "the K fragment loads assume 2 or 4 depth blocks of 8");
  static_assert(kHeads == 1 || kHeads == 2, "one head, or a pair");
  constexpr int kBlocks = kDepth / 8;  // 16-byte depth blocks per row
  constexpr int kSteps = kDepth / 16;  // k steps of Q.K^T
  const int ld_row = lanes.ld_row, ld_matrix = lanes.ld_matrix;
  // scores [16][64] = Q rows . K^T: acc[h][j] is the 16 x 8 tile of keys [8j, 8j + 8).
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[h][j][0] = acc[h][j][1] = acc[h][j][2] = acc[h][j][3] = 0.0f;
  constexpr int kTilesPerLoad = 4 / kBlocks;  // key tiles per ldmatrix_x4 of K (1 at depth 32)
#pragma unroll
  for (int j = 0; j < 8; j += kTilesPerLoad)
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      uint32_t kb[4];  // matrix i: keys 8 (j + i / kBlocks) .., depth 8 (i % kBlocks) ..
      ldmatrix_x4(kb, heads.ks + h * heads.ks_stride +
                          swizzled<kBlocks>(8 * (j + ld_matrix / kBlocks) + ld_row, ld_matrix % kBlocks));
#pragma unroll
      for (int tt = 0; tt < kTilesPerLoad; ++tt)
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk)
          mma_16x8x16(acc[h][j + tt], qa[h][kk][0], qa[h][kk][1], qa[h][kk][2], qa[h][kk][3],
                      kb[tt * kBlocks + 2 * kk], kb[tt * kBlocks + 2 * kk + 1]);
    }
  // s = (scores * scale + smolgen) log2 e; lane 4g + t holds rows g
  // (acc[h][j][0..1]) and g + 8 (acc[h][j][2..3]) at keys 8j + 2t, 8j + 2t + 1.
  if (has_gen) {
#pragma unroll
    for (int j = 0; j < 8; j += 2)
#pragma unroll
      for (int h = 0; h < kHeads; ++h) {
        uint32_t gb[4];  // tile j rows g, g + 8; tile j + 1 rows g, g + 8
        ldmatrix_x4(gb, heads.gs + h * heads.gs_stride +
                            swizzled<kGenPieces>(row0 + ld_row + 8 * (ld_matrix % 2), j + ld_matrix / 2));
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&gb[q]));
          float* a = acc[h][j + q / 2] + 2 * (q % 2);
          a[0] = fmaf(a[0], score_scale, f.x * kLog2e);
          a[1] = fmaf(a[1], score_scale, f.y * kLog2e);
        }
      }
  } else {
#pragma unroll
    for (int h = 0; h < kHeads; ++h)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[h][j][e] *= score_scale;
  }
}

template <int kDepth, int kHeads>
__device__ __forceinline__ void attend_finish(float (&o)[kHeads][kDepth / 8][4], float (&acc)[kHeads][8][4],
                                              const HeadOperands& heads, const FragmentLanes& lanes) {
  constexpr int kBlocks = kDepth / 8;
  const int quad_col = lanes.quad_col, ld_row = lanes.ld_row, ld_matrix = lanes.ld_matrix;
  // softmax over each row: its 64 values are in the 4 lanes of a quad.
  float top[kHeads][2], sum[kHeads][2], inv[kHeads][2];
#pragma unroll
  for (int h = 0; h < kHeads; ++h) {
    top[h][0] = acc[h][0][0];
    top[h][1] = acc[h][0][2];
    sum[h][0] = sum[h][1] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int h = 0; h < kHeads; ++h)
#pragma unroll
      for (int e = 0; e < 4; ++e) top[h][e / 2] = fmaxf(top[h][e / 2], acc[h][j][e]);
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row)
      top[h][half_row] = fmaxf(top[h][half_row], gpu_shfl_xor(top[h][half_row], 1));
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row)
      top[h][half_row] = fmaxf(top[h][half_row], gpu_shfl_xor(top[h][half_row], 2));
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int h = 0; h < kHeads; ++h)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[h][j][e] = fast_exp2(acc[h][j][e] - top[h][e / 2]);
        sum[h][e / 2] += acc[h][j][e];
      }
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) sum[h][half_row] += gpu_shfl_xor(sum[h][half_row], 1);
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int half_row = 0; half_row < 2; ++half_row) {
      sum[h][half_row] += gpu_shfl_xor(sum[h][half_row], 2);
      inv[h][half_row] = 1.0f / sum[h][half_row];
    }
  // out [16][depth] = P . V + b_v: the probabilities of keys [16kk, 16kk + 16)
  // are the A fragment as they lie (tiles 2kk and 2kk + 1), rounded to half.
#pragma unroll
  for (int h = 0; h < kHeads; ++h)
#pragma unroll
    for (int dt = 0; dt < kBlocks; ++dt) {
      const float2 b = *reinterpret_cast<const float2*>(heads.v_bias + h * heads.v_bias_stride + 8 * dt + quad_col);
      o[h][dt][0] = o[h][dt][2] = b.x;
      o[h][dt][1] = o[h][dt][3] = b.y;
    }
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
#pragma unroll
    for (int h = 0; h < kHeads; ++h) {
      uint32_t pa[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float* a = acc[h][2 * kk + q / 2] + 2 * (q % 2);  // a0: tile 2kk row g, a1: row g + 8, a2, a3: tile 2kk + 1
        const float r = inv[h][q % 2];
        const __half2 p2 = __floats2half2_rn(a[0] * r, a[1] * r);
        pa[q] = *reinterpret_cast<const uint32_t*>(&p2);
      }
#pragma unroll
      for (int dt = 0; dt < kBlocks; dt += 2) {
        uint32_t vb[4];  // depth tile dt keys 16kk + 0..7, + 8..15; then depth tile dt + 1
        ldmatrix_x4_trans(vb, heads.vs + h * heads.vs_stride +
                                  swizzled<kBlocks>(16 * kk + ld_row + 8 * (ld_matrix % 2), dt + ld_matrix / 2));
        mma_16x8x16(o[h][dt], pa[0], pa[1], pa[2], pa[3], vb[0], vb[1]);
        mma_16x8x16(o[h][dt + 1], pa[0], pa[1], pa[2], pa[3], vb[2], vb[3]);
      }
    }
}

// One (position, head): both phases with a single head, for the
// mma.sync attention (attn_fused_attention_tc.hip). ks, vs, gs, v_bias as
// described there.
template <int kDepth>
__device__ __forceinline__ void attend_rows(float (&o)[kDepth / 8][4], const uint32_t (&qa)[kDepth / 16][4],
                                            const __half* ks, const __half* vs, const __half* gs, bool has_gen,
                                            int row0, const FragmentLanes& lanes, const float* v_bias,
                                            float score_scale) {
  const HeadOperands one = {ks, vs, gs, v_bias, 0, 0, 0, 0};
  float acc[1][8][4];
  attend_scores<kDepth, 1>(acc, reinterpret_cast<const uint32_t(&)[1][kDepth / 16][4]>(qa), one, has_gen, row0, lanes,
                           score_scale);
  attend_finish<kDepth, 1>(reinterpret_cast<float(&)[1][kDepth / 8][4]>(o), acc, one, lanes);
}

}  // namespace attn
}  // namespace lc0rocm
#endif
