// bias_act: bias + optional residual + activation, fused, one pass.
#include <cstdint>

#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {
namespace bias_act_detail {

// One element: the reference the vector path must equal. kAct: the
// activation fixed at compile time, or kAnyActivation for act
// (activation.h).
template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void one(long long i, int channels, const T* x, const float* bias,
                                             const T* residual, T* y, Activation act) {
  float v = to_float(x[i]);
  if (bias) v += bias[i % channels];
  if (residual) v += to_float(residual[i]);
  y[i] = from_float<T>(activate_as<kAct>(v, act));
}

// 16 bytes per thread: kVec elements of one row (channels % kVec == 0), read
// whole before anything is written, so y may alias x or residual.
template <typename T>
struct Vec {
  static constexpr int kVec = 16 / sizeof(T);
  union Pack {
    uint4 raw;
    T v[kVec];
    __host__ __device__ Pack() {}
  };
};

template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void vector(long long vi, int channels, const T* x, const float* bias,
                                                const T* residual, T* y, Activation act) {
  constexpr int kVec = Vec<T>::kVec;
  typename Vec<T>::Pack in, res, out;
  in.raw = reinterpret_cast<const uint4*>(x)[vi];
  if (residual) res.raw = reinterpret_cast<const uint4*>(residual)[vi];
  // 64-bit division is a long instruction sequence: the 32-bit one whenever
  // the element index fits (every launch below ~2^31 elements).
  const long long element = vi * kVec;
  const int c0 = element < 0x7fffffffLL ? static_cast<int>(static_cast<unsigned>(element) % channels)
                                        : static_cast<int>(element % channels);
  // The bias 16 bytes at a time (the launcher checked its alignment; c0 is
  // a multiple of kVec, itself a multiple of 4): neighbouring threads' biases
  // are kVec floats apart, so scalar loads would touch several cache lines
  // per instruction.
  float b[kVec];
  if (bias) {
#pragma unroll
    for (int k = 0; k < kVec; k += 4) {
      const float4 f = *reinterpret_cast<const float4*>(bias + c0 + k);
      b[k] = f.x;
      b[k + 1] = f.y;
      b[k + 2] = f.z;
      b[k + 3] = f.w;
    }
  }
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    float v = to_float(in.v[k]);
    if (bias) v += b[k];
    if (residual) v += to_float(res.v[k]);
    out.v[k] = from_float<T>(activate_as<kAct>(v, act));
  }
  reinterpret_cast<uint4*>(y)[vi] = out.raw;
}

// The vector path applies when rows split into whole 16-byte vectors (and,
// checked by the launcher, the bias is 16-byte aligned: it is read 4 floats
// at a time).
template <typename T>
bool can_vectorize(int channels, const void* x, const void* residual, const void* y) {
  return channels % Vec<T>::kVec == 0 && aligned16(x) && aligned16(y) &&
         (residual == nullptr || aligned16(residual));
}

}  // namespace bias_act_detail

template <typename T, Activation kAct>
__global__ void bias_act_kernel(long long total, int channels, const T* x, const float* bias,
                                const T* residual, T* y, Activation act) {
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < total) bias_act_detail::one<T, kAct>(i, channels, x, bias, residual, y, act);
}

template <typename T, Activation kAct>
__global__ void bias_act_vec_kernel(long long vectors, int channels, const T* x, const float* bias,
                                    const T* residual, T* y, Activation act) {
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long vi = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (vi < vectors) bias_act_detail::vector<T, kAct>(vi, channels, x, bias, residual, y, act);
}

template <typename T>
static void launch_bias_act(hipStream_t stream, long long total, int channels, const T* x,
                            const float* bias, const T* residual, T* y, Activation act) {
  const bool vectorized = bias_act_detail::can_vectorize<T>(channels, x, residual, y) &&
                          (bias == nullptr || aligned16(bias));
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (vectorized) {
      long long vectors = total / bias_act_detail::Vec<T>::kVec;
      gpu_launch(bias_act_vec_kernel<T, kAct>, blocks_for(vectors), kBlockThreads, 0, stream, vectors, channels, x,
                 bias, residual, y, act);
    } else {
      gpu_launch(bias_act_kernel<T, kAct>, blocks_for(total), kBlockThreads, 0, stream, total, channels, x, bias,
                 residual, y, act);
    }
  });
}

void bias_act(hipStream_t stream, DType dt, long long rows, int channels, const void* x,
              const float* bias, const void* residual, void* y, Activation act) {
  long long total = rows * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    launch_bias_act<float>(stream, total, channels, (const float*)x, bias, (const float*)residual,
                           (float*)y, act);
  else
    launch_bias_act<half>(stream, total, channels, (const half*)x, bias, (const half*)residual,
                          (half*)y, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
