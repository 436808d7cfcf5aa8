// block_matvec.h - a small dense layer computed by a whole thread block, for
// kernels that run an SE unit per position (se_fused.hip,
// winograd_output_input.hip).
#pragma once
#include "../gpu_compat.h"
#include "../tensor/dtype.h"

namespace lc0rocm {

// out[o] = sum_i in[i] * w[i * outs + o] for o < outs (in, partial and out in
// shared memory; w anywhere): `parts` threads per output sum strided slices
// of i into `partial` [max(blockDim.x, outs)]; one thread per output then
// adds the slices in order, so the result does not depend on timing. Every
// thread of the block must call it; it ends with a barrier.
template <typename T>
__device__ void block_matvec(const float* in, const T* w, int ins, int outs, float* partial, float* out) {
  const int parts = static_cast<int>(blockDim.x) > outs ? blockDim.x / outs : 1;
  for (int t = threadIdx.x; t < parts * outs; t += blockDim.x) {
    const int o = t % outs, p = t / outs;
    float sum = 0.0f;
#pragma unroll 4
    for (int i = p; i < ins; i += parts) sum += in[i] * to_float(w[static_cast<long long>(i) * outs + o]);
    partial[p * outs + o] = sum;
  }
  __syncthreads();
  for (int o = threadIdx.x; o < outs; o += blockDim.x) {
    float sum = 0.0f;
    for (int p = 0; p < parts; ++p) sum += partial[p * outs + o];
    out[o] = sum;
  }
  __syncthreads();
}

}  // namespace lc0rocm
