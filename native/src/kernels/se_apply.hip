// se_apply: SE excitation fused with the residual add and the activation.
#include <cstdint>

#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {
namespace se_apply_detail {

// Element i of [n][64][C]: act(sigmoid(g[pos][c]) * x + g[pos][C + c] + residual).
// kAct: the activation fixed at compile time, or kAnyActivation for act.
template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void one(long long i, int channels, const T* x, const T* g,
                                             const T* residual, T* y, Activation act) {
  int c = static_cast<int>(i % channels);
  long long pos = i / (64LL * channels);
  const T* gp = g + pos * 2 * channels;
  float scale = 1.0f / (1.0f + expf(-to_float(gp[c])));
  float v = scale * to_float(x[i]) + to_float(gp[channels + c]);
  if (residual) v += to_float(residual[i]);
  y[i] = from_float<T>(activate_as<kAct>(v, act));
}

template <typename T>
struct Vec {
  static constexpr int kVec = 16 / sizeof(T);
  union Pack {
    uint4 raw;
    T v[kVec];
    __host__ __device__ Pack() {}
  };
};

// 16 bytes of one row per call, read whole before written (y may alias x or
// residual); needs channels % kVec == 0 and aligned x, residual, y.
template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void vector(long long vi, int channels, const T* x, const T* g,
                                                const T* residual, T* y, Activation act) {
  constexpr int kVec = Vec<T>::kVec;
  typename Vec<T>::Pack in, res, out;
  in.raw = reinterpret_cast<const uint4*>(x)[vi];
  if (residual) res.raw = reinterpret_cast<const uint4*>(residual)[vi];
  long long i0 = vi * kVec;
  int c0 = static_cast<int>(i0 % channels);
  const T* gp = g + (i0 / (64LL * channels)) * 2 * channels;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    float scale = 1.0f / (1.0f + expf(-to_float(gp[c0 + k])));
    float v = scale * to_float(in.v[k]) + to_float(gp[channels + c0 + k]);
    if (residual) v += to_float(res.v[k]);
    out.v[k] = from_float<T>(activate_as<kAct>(v, act));
  }
  reinterpret_cast<uint4*>(y)[vi] = out.raw;
}

template <typename T>
bool can_vectorize(int channels, const void* x, const void* residual, const void* y) {
  return channels % Vec<T>::kVec == 0 && aligned16(x) && aligned16(y) &&
         (residual == nullptr || aligned16(residual));
}

}  // namespace se_apply_detail

template <typename T, Activation kAct>
__global__ void se_apply_kernel(long long total, int channels, const T* x, const T* g, const T* residual,
                                T* y, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < total) se_apply_detail::one<T, kAct>(i, channels, x, g, residual, y, act);
}

template <typename T, Activation kAct>
__global__ void se_apply_vec_kernel(long long vectors, int channels, const T* x, const T* g,
                                    const T* residual, T* y, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long vi = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (vi < vectors) se_apply_detail::vector<T, kAct>(vi, channels, x, g, residual, y, act);
}

template <typename T>
static void launch_se_apply(hipStream_t stream, int n, int channels, const T* x, const T* g,
                            const T* residual, T* y, Activation act) {
  long long total = (long long)n * 64 * channels;
  const bool vectorized = se_apply_detail::can_vectorize<T>(channels, x, residual, y);
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (vectorized) {
      long long vectors = total / se_apply_detail::Vec<T>::kVec;
      gpu_launch(se_apply_vec_kernel<T, kAct>, blocks_for(vectors), kBlockThreads, 0, stream, vectors, channels, x, g,
                 residual, y, act);
    } else {
      gpu_launch(se_apply_kernel<T, kAct>, blocks_for(total), kBlockThreads, 0, stream, total, channels, x, g,
                 residual, y, act);
    }
  });
}

void se_apply(hipStream_t stream, DType dt, int n, int channels, const void* x, const void* g,
              const void* residual, void* y, Activation act) {
  if ((long long)n * channels == 0) return;
  if (dt == DType::F32)
    launch_se_apply<float>(stream, n, channels, (const float*)x, (const float*)g,
                           (const float*)residual, (float*)y, act);
  else
    launch_se_apply<half>(stream, n, channels, (const half*)x, (const half*)g,
                          (const half*)residual, (half*)y, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
