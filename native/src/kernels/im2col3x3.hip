// im2col3x3: the 3x3 neighbourhoods of every square, as GEMM columns,
// optionally finishing the layer before on the way: columns get
// act(x + bias) (rounded to the storage type, as bias_act would have stored
// it), so that layer's own bias_act launch is not needed (Conv3x3's deferred
// epilogue). Off the board stays 0: the padding is of the finished tensor.
#include <cstdint>

#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {
namespace im2col_detail {

// x's value at channel c, finished (bias added, activated) when bias is given.
// kAct: the activation fixed at compile time, or kAnyActivation for act.
template <typename T, Activation kAct>
__host__ __device__ __forceinline__ T finish(T v, int c, const float* bias, Activation act) {
  return bias ? from_float<T>(activate_as<kAct>(to_float(v) + bias[c], act)) : v;
}

// Element i of columns [n*64][9*C] (column = tap*C + c): x at the tap's
// neighbour square, or 0 off the board.
template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void one(long long i, int channels, const T* x, T* columns,
                                             const float* bias, Activation act) {
  int c = static_cast<int>(i % channels);
  int tap = static_cast<int>((i / channels) % 9);
  long long row = i / (9LL * channels);  // position * 64 + square
  int square = static_cast<int>(row % 64);
  long long pos = row / 64;
  int rank = square / 8 + tap / 3 - 1;
  int file = square % 8 + tap % 3 - 1;
  T v = from_float<T>(0.0f);
  if (rank >= 0 && rank < 8 && file >= 0 && file < 8)
    v = finish<T, kAct>(x[(pos * 64 + rank * 8 + file) * channels + c], c, bias, act);
  columns[i] = v;
}

// 16 bytes (kVec channels of one tap of one square) per call; needs
// channels % kVec == 0 and 16-byte aligned x and columns.
template <typename T>
struct Vec {
  static constexpr int kVec = 16 / sizeof(T);
};

template <typename T, Activation kAct = kAnyActivation>
__host__ __device__ __forceinline__ void vector(long long vi, int channels, const T* x, T* columns,
                                                const float* bias, Activation act) {
  constexpr int kVec = Vec<T>::kVec;
  const int vecs_per_tap = channels / kVec;
  int cv = static_cast<int>(vi % vecs_per_tap);
  int tap = static_cast<int>((vi / vecs_per_tap) % 9);
  long long row = vi / (9LL * vecs_per_tap);
  int square = static_cast<int>(row % 64);
  long long pos = row / 64;
  int rank = square / 8 + tap / 3 - 1;
  int file = square % 8 + tap % 3 - 1;
  uint4 v = make_uint4(0, 0, 0, 0);  // all-zero bits are 0.0 in float and half
  if (rank >= 0 && rank < 8 && file >= 0 && file < 8) {
    v = reinterpret_cast<const uint4*>(x + (pos * 64 + rank * 8 + file) * channels)[cv];
    if (bias) {
      T* e = reinterpret_cast<T*>(&v);
#pragma unroll
      for (int k = 0; k < kVec; ++k) e[k] = finish<T, kAct>(e[k], cv * kVec + k, bias, act);
    }
  }
  reinterpret_cast<uint4*>(columns)[vi] = v;
}

template <typename T>
bool can_vectorize(int channels, const void* x, const void* columns) {
  return channels % Vec<T>::kVec == 0 && aligned16(x) && aligned16(columns);
}

}  // namespace im2col_detail

template <typename T, Activation kAct>
__global__ void im2col3x3_kernel(long long total, int channels, const T* x, T* columns, const float* bias,
                                 Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < total) im2col_detail::one<T, kAct>(i, channels, x, columns, bias, act);
}

template <typename T, Activation kAct>
__global__ void im2col3x3_vec_kernel(long long vectors, int channels, const T* x, T* columns,
                                     const float* bias, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long vi = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (vi < vectors) im2col_detail::vector<T, kAct>(vi, channels, x, columns, bias, act);
}

template <typename T>
static void launch_im2col(hipStream_t stream, int n, int channels, const T* x, T* columns, const float* bias,
                          Activation act) {
  long long total = (long long)n * 64 * 9 * channels;
  const bool vectorized = im2col_detail::can_vectorize<T>(channels, x, columns);
  // Without a pending epilogue there is nothing to activate: one variant.
  with_activation(bias ? act : Activation::None, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (vectorized) {
      long long vectors = total / im2col_detail::Vec<T>::kVec;
      gpu_launch(im2col3x3_vec_kernel<T, kAct>, blocks_for(vectors), kBlockThreads, 0, stream, vectors, channels, x,
                 columns, bias, act);
    } else {
      gpu_launch(im2col3x3_kernel<T, kAct>, blocks_for(total), kBlockThreads, 0, stream, total, channels, x, columns,
                 bias, act);
    }
  });
}

void im2col3x3(hipStream_t stream, DType dt, int n, int channels, const void* x, void* columns,
               const float* bias, Activation act) {
  if ((long long)n * channels == 0) return;
  if (dt == DType::F32)
    launch_im2col<float>(stream, n, channels, (const float*)x, (float*)columns, bias, act);
  else
    launch_im2col<half>(stream, n, channels, (const half*)x, (half*)columns, bias, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
