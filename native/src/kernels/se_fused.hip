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
// NVIDIA, float and half. Design note: native/docs/SE_FUSED.md.
#include <cstdint>

#include "../gpu_compat.h"
#include "aligned.h"
#include "block_ops.h"
#include "ops.h"

namespace lc0rocm {
namespace se_fused_detail {

constexpr int kThreads = 256;

static_assert(kThreads == limits::kSeFusedThreads, "plan/limits.h's shared memory");
// Floats of shared memory: pooled [C], hidden [H], gates [2C], partial sums
// [max(threads, H, 2C)].
inline size_t shared_floats(int channels, int hidden) { return limits::se_fused_shared_floats(channels, hidden); }

template <typename T>
struct Vec {
  static constexpr int kVec = 16 / sizeof(T);
  union Pack {
    uint4 raw;
    T v[kVec];
    __host__ __device__ Pack() {}
  };
};

}  // namespace se_fused_detail

// kAct: the output's activation fixed at compile time, or kAnyActivation
// for act (the SE unit's hidden layer takes act at run time: one value per
// thread).
template <typename T, Activation kAct>
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
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch: the prior kernel's output is read from here on

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

  block_se_gates(pooled, static_cast<const T*>(se.w1), se.b1, static_cast<const T*>(se.w2), se.b2, C, H, act,
                 partial, hidden, gates);

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
        out.v[k] = from_float<T>(activate_as<kAct>(v, act));
      }
      reinterpret_cast<uint4*>(yp)[vi] = out.raw;
    }
  } else {
    for (int i = tid; i < 64 * C; i += threads) {
      const int c = i % C;
      float v = (to_float(xp[i]) + (bias ? bias[c] : 0.0f)) * gates[c] + gates[C + c];
      if (rp) v += to_float(rp[i]);
      yp[i] = from_float<T>(activate_as<kAct>(v, act));
    }
  }
}

// The same result for small positions (64 x C of at most kPer 16-byte
// vectors per thread, C <= 64 in half), built so that one round trip to
// memory serves the whole block: every load (this position's x and
// residual into registers, SE weights and biases into shared memory) is
// issued at the start, before anything waits on one; the pool reads the
// registers, the dense layers read shared memory, and the output pass
// writes from the registers with no second read of x. The generic kernel
// above waits on a dozen dependent trips to L2 instead (SE_FUSED.md).
namespace se_fused_detail {

// Floats of shared memory: pooled [C], hidden [H], gates [2C], biases
// (conv [C], b1 [H], b2 [2C]) and the pool's partial sums [threads * kVec],
// then the weights as T: W1 [C][H], W2 [H][2C].
template <typename T>
inline size_t tile_shared_bytes(int channels, int hidden) {
  const size_t floats = static_cast<size_t>(6 * channels + 2 * hidden + kThreads * Vec<T>::kVec);
  const size_t weights = static_cast<size_t>(3 * channels * hidden) * sizeof(T);
  return (floats * sizeof(float) + 15) / 16 * 16 + weights;
}

}  // namespace se_fused_detail

template <typename T, int kPer, Activation kAct>
__global__ void __launch_bounds__(se_fused_detail::kThreads)
se_fused_tile_kernel(int channels, const T* x, const float* bias, SeWeights se, const T* residual, T* y,
                     Activation act) {
  using namespace se_fused_detail;
  constexpr int kVec = Vec<T>::kVec;
  extern __shared__ float se_scratch[];
  const int C = channels, H = se.hidden, tid = threadIdx.x;
  float* pooled = se_scratch;
  float* hidden = pooled + C;
  float* gates = hidden + H;
  float* conv_bias = gates + 2 * C;
  float* b1 = conv_bias + C;
  float* b2 = b1 + H;
  float* partial = b2 + 2 * C;                       // [kThreads / groups][C]
  const size_t floats = static_cast<size_t>(6 * C + 2 * H + kThreads * kVec);
  T* w1 = reinterpret_cast<T*>(reinterpret_cast<char*>(se_scratch) + (floats * sizeof(float) + 15) / 16 * 16);
  T* w2 = w1 + C * H;

  // Every load first. The weights and biases need nothing from the prior
  // kernel, so they go before the wait for it (gpu_compat.h's dependent
  // launch); then this thread's vectors of x and residual (vector
  // tid + k * kThreads; all of one thread's vectors hold the same channels,
  // as kThreads is a multiple of the vectors per square).
  gpu_release_next_grid();
  copy_to_shared(static_cast<const T*>(se.w1), w1, C * H);
  copy_to_shared(static_cast<const T*>(se.w2), w2, 2 * C * H);
  for (int i = tid; i < C; i += kThreads) conv_bias[i] = bias ? bias[i] : 0.0f;
  for (int i = tid; i < H; i += kThreads) b1[i] = se.b1[i];
  for (int i = tid; i < 2 * C; i += kThreads) b2[i] = se.b2[i];
  gpu_wait_for_prior_grid();
  const long long base = static_cast<long long>(blockIdx.x) * 64 * C;
  const uint4* xv = reinterpret_cast<const uint4*>(x + base);
  const uint4* rv = residual ? reinterpret_cast<const uint4*>(residual + base) : nullptr;
  typename Vec<T>::Pack in[kPer], res[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) in[k].raw = xv[tid + k * kThreads];
  if (rv) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) res[k].raw = rv[tid + k * kThreads];
  }

  // Pool: this thread's channels summed over its squares, then the
  // kThreads / groups rows of partial sums added in a fixed order.
  const int groups = C / kVec;                       // vectors per square
  const int c0 = (tid % groups) * kVec, row = tid / groups;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kPer; ++k) sum += to_float(in[k].v[j]);
    partial[row * C + c0 + j] = sum;
  }
  __syncthreads();
  const int rows = kThreads / groups;
  for (int c = tid; c < C; c += kThreads) {
    float sum = 0.0f;
    for (int r = 0; r < rows; ++r) sum += partial[r * C + c];
    pooled[c] = sum * (1.0f / 64.0f) + conv_bias[c];
  }
  __syncthreads();

  block_se_gates(pooled, w1, b1, w2, b2, C, H, act, partial, hidden, gates);

  uint4* yv = reinterpret_cast<uint4*>(y + base);
#pragma unroll
  for (int k = 0; k < kPer; ++k) {
    typename Vec<T>::Pack out;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const int c = c0 + j;
      float v = (to_float(in[k].v[j]) + conv_bias[c]) * gates[c] + gates[C + c];
      if (rv) v += to_float(res[k].v[j]);
      out.v[j] = from_float<T>(activate_as<kAct>(v, act));
    }
    yv[tid + k * kThreads] = out.raw;
  }
}

// kPer, the vectors per thread of the tile kernel for this shape, or 0 when
// it does not apply: whole vectors per square, a block's threads a multiple
// of them, at most 4 per thread, shared memory within 48 KB.
template <typename T>
static int tile_vectors_per_thread(int channels, int hidden) {
  using namespace se_fused_detail;
  constexpr int kVec = Vec<T>::kVec;
  if (channels % kVec != 0 || kThreads % (channels / kVec) != 0) return 0;
  const int vectors = 64 * channels / kVec;
  if (vectors % kThreads != 0) return 0;
  const int per = vectors / kThreads;
  if (per != 1 && per != 2 && per != 4) return 0;
  return tile_shared_bytes<T>(channels, hidden) <= 48 * 1024 ? per : 0;
}

template <typename T>
static void launch_se_fused(hipStream_t stream, int n, int channels, const T* x, const float* bias,
                            const SeWeights& se, const T* residual, T* y, Activation act) {
  const bool vectorized = channels % se_fused_detail::Vec<T>::kVec == 0 && aligned16(x) && aligned16(y) &&
                          (residual == nullptr || aligned16(residual));
  const int per = vectorized ? tile_vectors_per_thread<T>(channels, se.hidden) : 0;
  constexpr int kThreads = se_fused_detail::kThreads;
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (per > 0) {
      const size_t tile_shared = se_fused_detail::tile_shared_bytes<T>(channels, se.hidden);
      auto kernel = per == 1 ? se_fused_tile_kernel<T, 1, kAct>
                    : per == 2 ? se_fused_tile_kernel<T, 2, kAct> : se_fused_tile_kernel<T, 4, kAct>;
      gpu_launch(kernel, n, kThreads, tile_shared, stream, channels, x, bias, se, residual, y, act);
      return;
    }
    const size_t shared = se_fused_detail::shared_floats(channels, se.hidden) * sizeof(float);
    gpu_launch(se_fused_kernel<T, kAct>, n, kThreads, shared, stream, channels, x, bias, se, residual, y, act,
               vectorized);
  });
}

void se_fused(hipStream_t stream, DType dt, int n, int channels, const void* x, const float* bias,
              const SeWeights& se, const void* residual, void* y, Activation act) {
  if (!limits::se_fused_fits(channels, se.hidden))
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
