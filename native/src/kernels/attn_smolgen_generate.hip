// attn_smolgen_generate: smolgen's second layer norm and its shared
// generator product in one launch, for small batches:
//   out [n * heads][4096] = LN(v [n][heads * gen]) * gammas + betas,
//                           viewed [n * heads][gen], . w [4096][gen]^T
// v half (dense2's output, bias and activation applied), gammas and betas
// float, w half; the normalised values rounded to half before the product
// (as the two-launch path stores them), float accumulation. Design and
// measurements: native/docs/SMOLGEN_GENERATE.md.
//
// Why: at batch 1 the layer norm (one block, ~3.3 us on an H100) and the
// generator product (cuBLAS, ~3.8 us) are two launches per encoder layer
// for a few thousand values. The normalised input is small (heads x gen
// halves), so every block normalises it again itself instead of meeting
// the others: no cross-block step.
//
// Layout: block b of position p writes output columns 64 b .. 64 b + 63 of
// the position's heads rows; warp w owns columns 8w .. 8w + 7.
//  - Before waiting for the prior kernel, lane 4g + t loads 16 bytes of its
//    warp's weight row g per chunk of 32 (columns 8t .. 8t + 7, every chunk
//    at once, into registers) and its share of gammas and betas: weights
//    are no kernel's output.
//  - Then the block loads the position's v (16 bytes a thread per step),
//    takes mean and variance by two block sums (two passes, as layer_norm),
//    and writes the normalised rows to shared memory in half.
//  - mma.sync m16n8k16 over one or two row tiles (heads up to 32), the
//    normalised rows and the weights read as whole 16-byte vectors
//    (mma_16x8x32_vectors, mma_tile.h).
//
// NVIDIA only (mma.sync, sm_80 on); elsewhere limits::smolgen_generate_fits says
// no and the caller keeps layer_norm + its BLAS product.
#include "../attention_device.h"
#include "../gpu_compat.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <cstdint>

#include "mma_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace smolgen_generate_detail {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCols = 8 * kWarps;  // output columns of a block
constexpr int kOutputs = 4096;     // 64 x 64 logits per head
constexpr int kMaxHeads = 32;      // two row tiles
constexpr int kChunk = 32;         // k per chunk: two k-steps
constexpr int kMaxChunks = 8;      // gen up to 256
constexpr int kVec = 8;            // halves in 16 bytes
constexpr int kMaxIters = 4;       // heads * gen up to 4 * 256 * 8 = 8,192

__global__ void __launch_bounds__(kThreads)
    smolgen_generate_kernel(__half* __restrict__ out, const __half* __restrict__ v, const float* __restrict__ gammas,
                            const float* __restrict__ betas, const __half* __restrict__ w, int heads, int gen,
                            float eps) {
  extern __shared__ uint4 shared_raw[];
  __half* z = reinterpret_cast<__half*>(shared_raw);  // [heads][vector_row_stride(gen)]
  __shared__ float partials[kWarps];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int col = blockIdx.x * kCols + 8 * warp;  // this warp's first output column
  const int position = blockIdx.y;
  const int width = heads * gen, chunks = gen / kChunk, stride = vector_row_stride(gen);

  const __half* w_row = w + static_cast<size_t>(col + g) * gen + 8 * t;
  uint4 wf[kMaxChunks];
#pragma unroll
  for (int i = 0; i < kMaxChunks; ++i)
    if (i < chunks) wf[i] = *reinterpret_cast<const uint4*>(w_row + i * kChunk);
  float gm[kMaxIters][kVec], bt[kMaxIters][kVec];
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    const int c = (tid + it * kThreads) * kVec;
    if (c < width) {
#pragma unroll
      for (int k = 0; k < kVec; k += 4) {
        const float4 a = *reinterpret_cast<const float4*>(gammas + c + k);
        const float4 b = *reinterpret_cast<const float4*>(betas + c + k);
        gm[it][k] = a.x, gm[it][k + 1] = a.y, gm[it][k + 2] = a.z, gm[it][k + 3] = a.w;
        bt[it][k] = b.x, bt[it][k + 1] = b.y, bt[it][k + 2] = b.z, bt[it][k + 3] = b.w;
      }
    }
  }

  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // v is the prior kernel's output

  const __half* vp = v + static_cast<size_t>(position) * width;
  uint4 raw[kMaxIters];
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    const int c = (tid + it * kThreads) * kVec;
    if (c < width) raw[it] = *reinterpret_cast<const uint4*>(vp + c);
  }
  float x[kMaxIters][kVec];
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    if ((tid + it * kThreads) * kVec < width) {
      const __half* e = reinterpret_cast<const __half*>(&raw[it]);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        x[it][k] = __half2float(e[k]);
        sum += x[it][k];
      }
    }
  }
  const float mean = block_sum(sum, partials) / width;
  float squares = 0.0f;
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    if ((tid + it * kThreads) * kVec < width) {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const float d = x[it][k] - mean;
        squares += d * d;
      }
    }
  }
  const float inv_std = rsqrtf(block_sum(squares, partials) / width + eps);
#pragma unroll
  for (int it = 0; it < kMaxIters; ++it) {
    const int c = (tid + it * kThreads) * kVec;
    if (c < width) {
      union {
        uint4 raw;
        __half h[kVec];
      } normalised;
#pragma unroll
      for (int k = 0; k < kVec; ++k)
        normalised.h[k] = __float2half_rn((x[it][k] - mean) * inv_std * gm[it][k] + bt[it][k]);
      *reinterpret_cast<uint4*>(z + (c / gen) * stride + c % gen) = normalised.raw;
    }
  }
  __syncthreads();

  const int tiles = heads > 16 ? 2 : 1;
  float acc[2][4] = {};
#pragma unroll
  for (int i = 0; i < kMaxChunks; ++i) {
    if (i >= chunks) break;
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      if (m >= tiles) break;
      const int ra = 16 * m + g, rb = ra + 8;
      const uint4 zero = make_uint4(0, 0, 0, 0);
      const uint4 a = ra < heads ? *reinterpret_cast<const uint4*>(z + ra * stride + i * kChunk + 8 * t) : zero;
      const uint4 b = rb < heads ? *reinterpret_cast<const uint4*>(z + rb * stride + i * kChunk + 8 * t) : zero;
      mma_16x8x32_vectors(acc[m], a, b, wf[i]);
    }
  }
  __half* out_position = out + static_cast<size_t>(position) * heads * kOutputs + col + 2 * t;
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    if (m >= tiles) break;
    const int ra = 16 * m + g, rb = ra + 8;
    if (ra < heads)
      *reinterpret_cast<__half2*>(out_position + static_cast<size_t>(ra) * kOutputs) =
          __floats2half2_rn(acc[m][0], acc[m][1]);
    if (rb < heads)
      *reinterpret_cast<__half2*>(out_position + static_cast<size_t>(rb) * kOutputs) =
          __floats2half2_rn(acc[m][2], acc[m][3]);
  }
}

}  // namespace smolgen_generate_detail

static_assert(smolgen_generate_detail::kOutputs == limits::kGenerateOutputs &&
                  smolgen_generate_detail::kMaxHeads == limits::kGenerateMaxHeads &&
                  smolgen_generate_detail::kChunk == limits::kGenerateChunk &&
                  smolgen_generate_detail::kMaxChunks == limits::kGenerateMaxChunks &&
                  smolgen_generate_detail::kMaxIters * smolgen_generate_detail::kThreads *
                          smolgen_generate_detail::kVec ==
                      limits::kGenerateMaxWidth,
              "plan/limits.h's shapes");

bool smolgen_generate(hipStream_t stream, const DeviceInfo& device, int n, int heads, int gen, const __half* v,
                      const float* gammas, const float* betas, float eps, const __half* w, int outputs,
                      __half* out) {
  using namespace smolgen_generate_detail;
  if (n < 1 || !limits::smolgen_generate_fits(device, heads, gen, outputs)) return false;
  if (!aligned16(v) || !aligned16(w) || !aligned16(gammas) || !aligned16(betas) || !aligned(out, 4)) return false;
  const size_t shared = sizeof(__half) * static_cast<size_t>(heads) * vector_row_stride(gen);
  gpu_launch(smolgen_generate_kernel, dim3(kOutputs / kCols, n), dim3(kThreads), shared, stream, out, v, gammas,
             betas, w, heads, gen, eps);
  check_launch("smolgen_generate");
  return true;
}

#else  // AMD: no mma.sync; the caller keeps layer_norm + its BLAS product.

bool smolgen_generate(hipStream_t, const DeviceInfo&, int, int, int, const __half*, const float*, const float*, float,
                      const __half*, int, __half*) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
