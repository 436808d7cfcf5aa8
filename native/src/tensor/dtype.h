// dtype.h - the two storage types of activations and weights.
#pragma once
#include <cstddef>

#include "../gpu_compat.h"

namespace lc0rocm {

enum class DType { F32, F16 };
using half = __half;

inline size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

// Convert float <-> T (host too, for host-side checks of kernel code).
template <typename T> __host__ __device__ __forceinline__ float to_float(T v);
template <> __host__ __device__ __forceinline__ float to_float<float>(float v) { return v; }
template <> __host__ __device__ __forceinline__ float to_float<half>(half v) { return __half2float(v); }
template <typename T> __host__ __device__ __forceinline__ T from_float(float v);
template <> __host__ __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __host__ __device__ __forceinline__ half from_float<half>(float v) { return __float2half(v); }

}  // namespace lc0rocm

// Instantiate a launcher template for both storage types.
#define LC0ROCM_FOR_EACH_DTYPE(MACRO) MACRO(float) MACRO(::lc0rocm::half)
