// tf32_split: float rows -> three blocks per row of tf32 heads and float
// remainders, so that one tf32 product over 3K columns equals the float32
// product over K to float32's precision: head.head + rest.head + head.rest,
// the rests' own product (~2^-22 of the result) dropped (native/docs/TF32_SPLIT.md).
#include <cstdint>

#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

// x rounded to tf32 (10 mantissa bits), to nearest, ties to even: the
// tensor cores then take it exactly. Infinities and NaN pass unchanged.
__device__ inline float tf32_head(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // finite: carry may reach the exponent, as rounding should
    u += 0xfffu + ((u >> 13) & 1u);
    u &= 0xffffe000u;
  }
  return __uint_as_float(u);
}

// What tf32_head leaves out (exact in float): with the head, x = head + rest
// and |rest| <= 2^-11 |x|. 0 where the head is not finite, so an infinity
// stays an infinity instead of turning into NaN.
__device__ inline float tf32_rest(float x, float head) {
  const float rest = x - head;
  return rest - rest == 0.0f ? rest : 0.0f;
}

// out [rows][3*cols]: a row's rest | head | head (activations) or
// head | rest | head (weights); against each other they pair rest.head,
// head.rest, then head.head. The small terms come first: the tensor cores'
// accumulator keeps fewer bits than a float adder, so small terms added
// after the large ones lose theirs (H100, K = 768: 7.8e-6 relative error
// with them last, against 5.0e-7 for a float GEMM). One thread per 4
// consecutive floats of x (cols is a multiple of 4: checked by the launcher).
__global__ void tf32_split_kernel(long long quads, int cols, const float4* x, float* out,
                                  Tf32SplitOrder order) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= quads) return;
  const int quads_per_row = cols / 4;
  const long long row = i / quads_per_row;
  const int col = static_cast<int>(i - row * quads_per_row) * 4;
  const float4 v = x[i];
  const float4 head = make_float4(tf32_head(v.x), tf32_head(v.y), tf32_head(v.z), tf32_head(v.w));
  const float4 rest = make_float4(tf32_rest(v.x, head.x), tf32_rest(v.y, head.y), tf32_rest(v.z, head.z),
                                  tf32_rest(v.w, head.w));
  float* r = out + row * 3 * cols + col;
  const bool weights = order == Tf32SplitOrder::Weights;
  *reinterpret_cast<float4*>(r) = weights ? head : rest;
  *reinterpret_cast<float4*>(r + cols) = weights ? rest : head;
  *reinterpret_cast<float4*>(r + 2 * cols) = head;
}

bool tf32_split(hipStream_t stream, long long rows, int cols, const float* x, float* out,
                Tf32SplitOrder order) {
  if (cols <= 0 || cols % 4 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(out) % 16 != 0)
    return false;
  const long long quads = rows * (cols / 4);
  if (quads == 0) return true;
  gpu_launch(tf32_split_kernel, blocks_for(quads), kBlockThreads, 0, stream, quads, cols,
             reinterpret_cast<const float4*>(x), out, order);
  GPU_CHECK_LAUNCH();
  return true;
}

}  // namespace lc0rocm
