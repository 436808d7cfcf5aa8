// block_ops.h - work shared by a whole thread block, for the kernels that
// run an SE unit per position (se_fused.hip, winograd_output_input.hip):
// a small dense layer, the SE unit's two, a copy into shared memory.
#pragma once
#include <cstdint>

#include "../gpu_compat.h"
#include "../tensor/dtype.h"
#include "activation.h"

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

// An SE unit's dense layers from the channel means pooled [C]: hidden [H] =
// act(pooled . w1 + b1), then gates [2C] = hidden . w2 + b2, the first C
// through a sigmoid (the scales; the rest are the shifts). pooled, partial
// (block_matvec's), hidden and gates in shared memory. Every thread of the
// block must call it; it ends with a barrier.
template <typename T>
__device__ void block_se_gates(const float* pooled, const T* w1, const float* b1, const T* w2, const float* b2,
                               int channels, int hidden_width, Activation act, float* partial, float* hidden,
                               float* gates) {
  block_matvec(pooled, w1, channels, hidden_width, partial, hidden);
  for (int j = threadIdx.x; j < hidden_width; j += blockDim.x) hidden[j] = activate(hidden[j] + b1[j], act);
  __syncthreads();
  block_matvec(hidden, w2, hidden_width, 2 * channels, partial, gates);
  for (int g = threadIdx.x; g < 2 * channels; g += blockDim.x) {
    const float v = gates[g] + b2[g];
    gates[g] = g < channels ? 1.0f / (1.0f + expf(-v)) : v;
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
