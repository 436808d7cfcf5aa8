// conv3x3_implicit: a 3x3 convolution of a few positions as an implicit GEMM
// on tensor cores (NVIDIA sm_80+, half storage, float accumulation), with
// its epilogue: y = act(conv3x3(x) + bias + residual), or the raw product
// when bias, residual and act are left out (an SE unit follows).
//
// For batches below the Winograd threshold, where im2col + GEMM + bias_act
// are three launches of a few microseconds each, all latency: here one
// launch, and no 9x-inflated im2col matrix in device memory.
//
// Layout (design note: native/docs/CONV3X3_IMPLICIT.md):
//   x  [n][64][cin] half, cin % 16 == 0, cin <= 128
//   wt [cout][9 * cin] half: the layer's weights transposed, column
//      tap * cin + c (tap = 3 ky + kx), so that a block's 8 output channels
//      are 8 contiguous rows
//   y  [n][64][cout] half, cout % 8 == 0; residual likewise (may alias y)
// One block per (position, 8 output channels), four warps of 16 squares:
// each warp's 16 x 8 outputs are 9 * cin / 16 mma.sync m16n8k16 products.
// Shared memory: the position as a zero-bordered 10 x 10 board
// [100][cin + 8] half and the block's weights [8][9 * cin + 8] half; under
// tap (ky, kx) square (r, f) reads padded square (r + ky) * 10 + f + kx, so
// the im2col is in the addressing. The 8-half paddings put the 8 rows a
// fragment load touches on distinct banks.
//
// AMD: mma.sync is NVIDIA's; this file then defines a stub that reports no
// support, and the caller keeps im2col + GEMM (where an MIOpen or rocWMMA
// convolution would slot in).
#include <cstdint>

#include "../gpu_compat.h"
#include "aligned.h"
#include "async_copy.h"
#include "mma_tile.h"
#include "ops.h"

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace conv_implicit_detail {
constexpr int kThreads = 128;       // 4 warps; mma.sync is defined for NVIDIA's 32 lanes
constexpr int kOutPerBlock = limits::kImplicitOutPerBlock;  // the n of m16n8k16
constexpr int kPad = limits::kImplicitPad;                  // halves per board square and weight row

// The board [100][cin + kPad] and the block's weight rows [8][9 cin + kPad], half.
constexpr size_t shared_bytes(int cin) { return limits::implicit_conv_shared_bytes(cin); }

}  // namespace conv_implicit_detail

template <Activation kAct>
__global__ void __launch_bounds__(conv_implicit_detail::kThreads)
conv3x3_implicit_kernel(int cin, int cout, const half* __restrict__ x, const half* __restrict__ wt,
                        const float* __restrict__ bias, const half* residual, half* y, Activation act) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  using namespace conv_implicit_detail;
  extern __shared__ __align__(16) unsigned char implicit_shared[];
  const int ldb = cin + kPad, k_total = 9 * cin, ldk = k_total + kPad;
  half* board = reinterpret_cast<half*>(implicit_shared);
  half* weights = board + 100 * ldb;
  const long long pos = blockIdx.x;
  const int o0 = blockIdx.y * kOutPerBlock;
  const int tid = threadIdx.x;

  // Every load first, as asynchronous 16-byte copies all in flight at once
  // (a load-then-store loop measured ~5.5 us per launch at batch 1, one
  // round trip per iteration). The block's weight rows and the board's zero
  // border need nothing from the prior kernel, so they go before the wait
  // for it (gpu_compat.h's dependent launch); the board's squares after.
  gpu_release_next_grid();
  const int row_vecs = k_total / 8;
  const half* wp = wt + static_cast<long long>(o0) * k_total;
  for (int i = tid; i < kOutPerBlock * row_vecs; i += blockDim.x) {
    const int r = i / row_vecs, v = i - r * row_vecs;
    copy16_async(weights + r * ldk + v * 8, wp + r * k_total + v * 8);
  }
  const int square_vecs = cin / 8;
  for (int i = tid; i < 100 * square_vecs; i += blockDim.x) {  // the border (the padding columns are never read)
    const int p = i / square_vecs, v = i - p * square_vecs;
    const int rank = p / 10 - 1, file = p % 10 - 1;
    if (rank < 0 || rank >= 8 || file < 0 || file >= 8)
      *reinterpret_cast<uint4*>(board + p * ldb + v * 8) = make_uint4(0, 0, 0, 0);
  }
  gpu_wait_for_prior_grid();
  const half* xp = x + pos * 64 * cin;
  for (int i = tid; i < 64 * square_vecs; i += blockDim.x) {  // the squares
    const int s = i / square_vecs, v = i - s * square_vecs;
    const int p = (s / 8 + 1) * 10 + s % 8 + 1;
    copy16_async(board + p * ldb + v * 8, xp + s * cin + v * 8);
  }
  commit_copies();
  wait_copies(0);
  __syncthreads();

  // Warp w: squares 16 w .. 16 w + 15 (ranks 2w and 2w + 1). Lane (g, q):
  // A rows g and g + 8 (file g of each rank), B column g, k pairs 2q and
  // 2q + 8 of each 16 (PTX's m16n8k16 fragment layout).
  const int lane = tid % warpSize, warp = tid / warpSize;
  const int g = lane / 4, q = lane % 4;
  const int rank_lo = 2 * warp, rank_hi = 2 * warp + 1;
  // Two accumulator sets (even and odd taps), so that consecutive products
  // do not wait on each other; added at the end.
  float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
  const half* b_row = weights + g * ldk + 2 * q;
#pragma unroll
  for (int tap = 0; tap < 9; ++tap) {
    float (&d)[4] = acc[tap & 1];
    const int ky = tap / 3, kx = tap % 3;
    const half* a_lo = board + ((rank_lo + ky) * 10 + g + kx) * ldb + 2 * q;
    const half* a_hi = board + ((rank_hi + ky) * 10 + g + kx) * ldb + 2 * q;
    const half* b = b_row + tap * cin;
#pragma unroll 4
    for (int c0 = 0; c0 < cin; c0 += 16) {
      const uint32_t a0 = load_half_pair(a_lo + c0), a1 = load_half_pair(a_hi + c0);
      const uint32_t a2 = load_half_pair(a_lo + c0 + 8), a3 = load_half_pair(a_hi + c0 + 8);
      const uint32_t b0 = load_half_pair(b + c0), b1 = load_half_pair(b + c0 + 8);
      mma_16x8x16(d, a0, a1, a2, a3, b0, b1);
    }
  }

  // Epilogue: this lane holds output channels o, o + 1 of squares
  // (rank_lo, g) and (rank_hi, g); each element's residual is read before
  // the same thread writes it (they may alias).
  const int o = o0 + 2 * q;
  const float bias0 = bias ? bias[o] : 0.0f, bias1 = bias ? bias[o + 1] : 0.0f;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int square = (h ? rank_hi : rank_lo) * 8 + g;
    const long long at = (pos * 64 + square) * cout + o;
    float v0 = acc[0][2 * h] + acc[1][2 * h] + bias0, v1 = acc[0][2 * h + 1] + acc[1][2 * h + 1] + bias1;
    if (residual) {
      const half2 r = *reinterpret_cast<const half2*>(residual + at);
      v0 += __low2float(r);
      v1 += __high2float(r);
    }
    *reinterpret_cast<half2*>(y + at) = __floats2half2_rn(activate_as<kAct>(v0, act), activate_as<kAct>(v1, act));
  }
#endif
}

void conv3x3_implicit(hipStream_t stream, DType dt, int n, int cin, int cout, const void* x, const void* wt,
                      const float* bias, const void* residual, void* y, Activation act) {
  using namespace conv_implicit_detail;
  if (dt != DType::F16 || !limits::implicit_conv_shape_fits(cin, cout))
    fail(LC0ROCM_INTERNAL_ERROR, "conv3x3_implicit: " + std::to_string(cin) + " -> " + std::to_string(cout) +
                                     " channels are not supported here");
  if (!aligned16(x) || !aligned16(wt) || (reinterpret_cast<uintptr_t>(y) & 3) ||
      (residual && (reinterpret_cast<uintptr_t>(residual) & 3)))
    fail(LC0ROCM_INTERNAL_ERROR, "conv3x3_implicit: misaligned buffers");
  if (n == 0) return;
  const dim3 grid(n, cout / kOutPerBlock);
  const size_t shared = shared_bytes(cin);
  with_activation(act, [&](auto tag) {
    gpu_launch(conv3x3_implicit_kernel<decltype(tag)::value>, grid, kThreads, shared, stream, cin, cout,
               static_cast<const half*>(x), static_cast<const half*>(wt), bias,
               static_cast<const half*>(residual), static_cast<half*>(y), act);
  });
  GPU_CHECK_LAUNCH();
}

#else  // AMD: no mma.sync; the caller keeps im2col + GEMM.

void conv3x3_implicit(hipStream_t, DType, int, int, int, const void*, const void*, const float*, const void*, void*,
                      Activation) {
  fail(LC0ROCM_INTERNAL_ERROR, "conv3x3_implicit: no tensor-core convolution in this build");
}

#endif

}  // namespace lc0rocm
