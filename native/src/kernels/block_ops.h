// block_ops.h - work shared by a whole thread block, for the kernels that
// run an SE unit per position (se_fused.hip, winograd_output_input.hip): a
// small dense layer, a copy into shared memory.
#pragma once
#include <cstdint>

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

// Copies `count` elements global -> shared with the block, 16 bytes a step
// when both ends allow it. No barrier: the caller's next one publishes it.
template <typename E>
__device__ void copy_to_shared(const E* from, E* to, int count) {
  constexpr int kPerVec = 16 / sizeof(E);
  if (count % kPerVec == 0 && (reinterpret_cast<uintptr_t>(from) & 15) == 0 &&
      (reinterpret_cast<uintptr_t>(to) & 15) == 0) {
    const uint4* f = reinterpret_cast<const uint4*>(from);
    uint4* t = reinterpret_cast<uint4*>(to);
    for (int i = threadIdx.x; i < count / kPerVec; i += blockDim.x) t[i] = f[i];
  } else {
    for (int i = threadIdx.x; i < count; i += blockDim.x) to[i] = from[i];
  }
}

}  // namespace lc0rocm
