// se_fused: a residual block's whole squeeze-excitation tail in one launch,
// one block per position:
//   v      = x + bias                       (x: the convolution's product)
//   pooled = mean over the 64 squares of v
//   hidden = act(pooled . W1 + b1)
//   g      = hidden . W2 + b2               ([2C]: scale logits, then shifts)
//   y      = act(sigmoid(g[c]) * v + g[C + c] + residual)
// Replaces bias_act + global_avg_pool + 2 x (GEMM + bias_act) + se_apply
// (7 launches) and keeps pooled, hidden and g in float (the unfused path
// rounds each to the storage type). Plain arithmetic, no matrix units and no
// warp-width assumption: the same kernel for AMD (wave32 and wave64) and
// NVIDIA, float and half. Design note: native/SE_FUSED.md.
#include <cstdint>

#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {
namespace se_fused_detail {

constexpr int kThreads = 256;

// Floats of shared memory: pooled [C], hidden [H], gates [2C], partial sums
// [max(threads, H, 2C)].
inline size_t shared_floats(int channels, int hidden) {
  int partial = kThreads;
  if (hidden > partial) partial = hidden;
  if (2 * channels > partial) partial = 2 * channels;
  return static_cast<size_t>(3 * channels + hidden + partial);
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

// out[o] = sum_i in[i] * w[i * outs + o] (+ nothing), for o < outs, with the
// whole block: `parts` threads per output sum strided slices of i into
// `partial`; one thread per output then adds the slices in order, so the
// result does not depend on timing.
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

}  // namespace se_fused_detail

template <typename T>
__global__ void __launch_bounds__(se_fused_detail::kThreads)
se_fused_kernel(int channels, const T* x, const float* bias, SeWeights se, const T* residual, T* y,
                Activation act, bool vectorized) {
  using namespace se_fused_detail;
  extern __shared__ float se_scratch[];
  const int C = channels, H = se.hidden;
  float* pooled = se_scratch;
  float* hidden = pooled + C;
  float* gates = hidden + H;
  float* partial = gates + 2 * C;
  const long long base = static_cast<long long>(blockIdx.x) * 64 * C;
  const T* xp = x + base;
  const int tid = threadIdx.x, threads = blockDim.x;

  // Mean over squares: `parts` threads per channel, neighbouring threads on
  // neighbouring channels (contiguous reads).
  const int parts = threads > C ? threads / C : 1;
  for (int t = tid; t < parts * C; t += threads) {
    const int c = t % C, p = t / C;
    float sum = 0.0f;
#pragma unroll 4
    for (int s = p; s < 64; s += parts) sum += to_float(xp[static_cast<long long>(s) * C + c]);
    partial[p * C + c] = sum;
  }
  __syncthreads();
  for (int c = tid; c < C; c += threads) {
    float sum = 0.0f;
    for (int p = 0; p < parts; ++p) sum += partial[p * C + c];
    pooled[c] = sum * (1.0f / 64.0f) + (bias ? bias[c] : 0.0f);
  }
  __syncthreads();

  block_matvec(pooled, static_cast<const T*>(se.w1), C, H, partial, hidden);
  for (int j = tid; j < H; j += threads) hidden[j] = activate(hidden[j] + se.b1[j], act);
  __syncthreads();
  block_matvec(hidden, static_cast<const T*>(se.w2), H, 2 * C, partial, gates);
  for (int g = tid; g < 2 * C; g += threads) {
    const float v = gates[g] + se.b2[g];
    gates[g] = g < C ? 1.0f / (1.0f + expf(-v)) : v;
  }
  __syncthreads();

  // y, 16 bytes per step where rows split into whole vectors; each element's
  // residual is read before y's same element is written (they may alias).
  T* yp = y + base;
  const T* rp = residual ? residual + base : nullptr;
  if (vectorized) {
    constexpr int kVec = Vec<T>::kVec;
    const int vecs = 64 * C / kVec;
    for (int vi = tid; vi < vecs; vi += threads) {
      typename Vec<T>::Pack in, res, out;
      in.raw = reinterpret_cast<const uint4*>(xp)[vi];
      if (rp) res.raw = reinterpret_cast<const uint4*>(rp)[vi];
      const int c0 = (vi * kVec) % C;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const int c = c0 + k;
        float v = (to_float(in.v[k]) + (bias ? bias[c] : 0.0f)) * gates[c] + gates[C + c];
        if (rp) v += to_float(res.v[k]);
        out.v[k] = from_float<T>(activate(v, act));
      }
      reinterpret_cast<uint4*>(yp)[vi] = out.raw;
    }
  } else {
    for (int i = tid; i < 64 * C; i += threads) {
      const int c = i % C;
      float v = (to_float(xp[i]) + (bias ? bias[c] : 0.0f)) * gates[c] + gates[C + c];
      if (rp) v += to_float(rp[i]);
      yp[i] = from_float<T>(activate(v, act));
    }
  }
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

bool se_fused_supported(int channels, int hidden) {
  return channels > 0 && hidden > 0 &&
         se_fused_detail::shared_floats(channels, hidden) * sizeof(float) <= 48 * 1024;
}

template <typename T>
static void launch_se_fused(hipStream_t stream, int n, int channels, const T* x, const float* bias,
                            const SeWeights& se, const T* residual, T* y, Activation act) {
  const bool vectorized = channels % se_fused_detail::Vec<T>::kVec == 0 && aligned16(x) && aligned16(y) &&
                          (residual == nullptr || aligned16(residual));
  const size_t shared = se_fused_detail::shared_floats(channels, se.hidden) * sizeof(float);
  se_fused_kernel<T><<<n, se_fused_detail::kThreads, shared, stream>>>(channels, x, bias, se, residual, y,
                                                                       act, vectorized);
}

void se_fused(hipStream_t stream, DType dt, int n, int channels, const void* x, const float* bias,
              const SeWeights& se, const void* residual, void* y, Activation act) {
  if (!se_fused_supported(channels, se.hidden))
    fail(LC0ROCM_INTERNAL_ERROR, "se_fused: " + std::to_string(channels) + " channels, " +
                                     std::to_string(se.hidden) + " hidden do not fit shared memory");
  if (n == 0) return;
  if (dt == DType::F32)
    launch_se_fused<float>(stream, n, channels, (const float*)x, bias, se, (const float*)residual,
                           (float*)y, act);
  else
    launch_se_fused<half>(stream, n, channels, (const half*)x, bias, se, (const half*)residual,
                          (half*)y, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
