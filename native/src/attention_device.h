// Device-side helpers shared by the attention kernels (kernels/attn_*.hip):
// float <-> storage conversion and warp-wide reductions (activations come
// from kernels/activation.h).
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

// 16 bytes of storage (8 halves or 4 floats) as floats, and back; p must be
// 16-byte aligned.
template <typename T>
constexpr int kVecWidth = 16 / static_cast<int>(sizeof(T));
template <typename T>
__device__ __forceinline__ void load_vec(const T* p, float* v) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVecWidth<T>; ++k) v[k] = to_float<T>(e[k]);
}
template <typename T>
__device__ __forceinline__ void store_vec(T* p, const float* v) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVecWidth<T>; ++k) e[k] = from_float<T>(v[k]);
  *reinterpret_cast<uint4*>(p) = raw;
}

// p[i .. i + V) as floats, 16 bytes per load (p 16-byte aligned, i % 4 == 0:
// a lane's parameters are 4 * V bytes apart from the next lane's, so scalar
// loads would touch several cache lines per instruction); nothing when p is
// null. For float parameters (biases, gammas, scales) beside a vector of
// storage (V = kVecWidth<T>).
template <int V>
__device__ __forceinline__ void load_params(const float* p, long long i, float* out) {
  if (p == nullptr) return;
#pragma unroll
  for (int k = 0; k < V; k += 4) {
    const float4 f = *reinterpret_cast<const float4*>(p + i + k);
    out[k] = f.x;
    out[k + 1] = f.y;
    out[k + 2] = f.z;
    out[k + 3] = f.w;
  }
}

// Sum / maximum of v over the lanes of one warp, every lane gets the result.
// The width is the device's warpSize (64 on CDNA, 32 on RDNA and NVIDIA);
// all lanes of the warp must take part.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += gpu_shfl_xor(v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, gpu_shfl_xor(v, offset));
  return v;
}

// Sum of v over a 1-D block (every thread must call it; all get the result):
// warp shuffles, then the warps' partial sums through `partials` (shared,
// blockDim.x / warpSize floats).
__device__ __forceinline__ float block_sum(float v, float* partials) {
  const int lanes = warpSize;
  v = warp_sum(v);
  if (threadIdx.x % lanes == 0) partials[threadIdx.x / lanes] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < static_cast<int>(blockDim.x) / lanes; ++w) total += partials[w];
  __syncthreads();  // partials may be reused right after
  return total;
}

}  // namespace attn
}  // namespace lc0rocm
