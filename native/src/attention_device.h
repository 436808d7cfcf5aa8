// Device-side helpers shared by the attention kernels (kernels/attn_*.hip):
// float <-> storage conversion and block-wide sums (activations come from
// kernels/activation.h).
#pragma once

#include "attention_kernels.h"

namespace lc0rocm {
namespace attn {

// Element i of p as float, and back.
template <typename T>
__device__ __forceinline__ float load_f(const T* p, long long i) {
  return to_float<T>(p[i]);
}
template <typename T>
__device__ __forceinline__ void store_f(T* p, long long i, float v) {
  p[i] = from_float<T>(v);
}

// Sum of v over the whole block (1-D block whose size is a power of two, at
// most 1024); every thread gets the result. scratch holds blockDim.x floats.
// A tree in shared memory: correct for any warp width.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  const int tid = threadIdx.x;
  scratch[tid] = v;
  __syncthreads();
  for (int half_size = blockDim.x / 2; half_size > 0; half_size /= 2) {
    if (tid < half_size) scratch[tid] += scratch[tid + half_size];
    __syncthreads();
  }
  float total = scratch[0];
  __syncthreads();  // scratch may be reused right after
  return total;
}

}  // namespace attn
}  // namespace lc0rocm
