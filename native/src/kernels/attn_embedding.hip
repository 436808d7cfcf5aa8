// The attention body's input embedding around its products
// (attention/body.cpp): the PE_MAP input (planes and positional encoding),
// PE_DENSE's piece planes and input, and the input gating.
#include "../attention_device.h"
#include "aligned.h"

namespace lc0rocm {
namespace attn {

// Input of the PE_MAP embedding: each square's 112 plane values followed by
// lc0's fixed 64-channel positional encoding of that square, which follows
// from the rules: -1 for the square itself, 1 for each square a queen or a
// knight move away, 0 elsewhere. One block per row (square of a position).
__device__ __forceinline__ float positional_encoding(int from, int to) {
  if (from == to) return -1.0f;
  const int dr = to / 8 - from / 8, df = to % 8 - from % 8;
  const int ar = dr < 0 ? -dr : dr, af = df < 0 ? -df : df;
  const bool queen = dr == 0 || df == 0 || ar == af;
  const bool knight = (ar == 1 && af == 2) || (ar == 2 && af == 1);
  return queen || knight ? 1.0f : 0.0f;
}

template <typename T>
__global__ void pe_map_input_kernel(T* out, const T* planes) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int width = kInputPlanes + kPosEncodingChannels;
  const int row = blockIdx.x;  // batch * 64 + square
  const int square = row % 64;
  const int c = threadIdx.x;
  if (c >= width) return;
  const float v = c < kInputPlanes ? load_f(planes, static_cast<long long>(row) * kInputPlanes + c)
                                   : positional_encoding(square, c - kInputPlanes);
  store_f(out, static_cast<long long>(row) * width + c, v);
}

template <typename T>
void pe_map_input(T* out, const T* planes, int batch, hipStream_t stream) {
  if (batch == 0) return;
  // 176 values per row: one thread each (a multiple of 64 and of 32).
  gpu_launch(pe_map_input_kernel<T>, batch * 64, 192, 0, stream, out, planes);
  check_launch("pe_map_input");
}

template void pe_map_input<float>(float*, const float*, int, hipStream_t);
template void pe_map_input<__half>(__half*, const __half*, int, hipStream_t);

// Input of PE_DENSE's preprocessing dense layer: the 12 piece planes of the
// newest board arranged per square, planes [batch][64][112] -> [batch][64*12].
// One thread per output value; the row math is 32-bit (rows < 2^31 / 12).
template <typename T>
__global__ void pe_dense_pieces_kernel(T* out, const T* planes, int total) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // index in out
  if (i >= total) return;
  const int plane = i % 12, row = i / 12;  // row = batch * 64 + square
  out[i] = planes[static_cast<long long>(row) * kInputPlanes + plane];
}

template <typename T>
void pe_dense_pieces(T* out, const T* planes, int batch, hipStream_t stream) {
  const int total = batch * 64 * 12;
  if (total == 0) return;
  gpu_launch(pe_dense_pieces_kernel<T>, div_up(total, kRowThreads), kRowThreads, 0, stream, out, planes, total);
  check_launch("pe_dense_pieces");
}

template void pe_dense_pieces<float>(float*, const float*, int, hipStream_t);
template void pe_dense_pieces<__half>(__half*, const __half*, int, hipStream_t);

// Input of the PE_DENSE embedding: each square's 112 plane values followed by
// its pre_size outputs of the preprocessing dense layer (bias added here):
// planes [batch][64][112], pre [batch][64*pre_size] -> [batch*64][112 + pre_size].
// One block per row (square of a position).
template <typename T>
__global__ void pe_dense_input_kernel(T* out, const T* planes, const T* pre, const float* pre_bias,
                                      int pre_size) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int width = kInputPlanes + pre_size;
  const int row = blockIdx.x;  // batch * 64 + square; pre's row too ([batch][64][pre_size])
  const int square = row % 64;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    float v;
    if (c < kInputPlanes) {
      v = load_f(planes, static_cast<long long>(row) * kInputPlanes + c);
    } else {
      const int j = c - kInputPlanes;
      v = load_f(pre, static_cast<long long>(row) * pre_size + j) + pre_bias[square * pre_size + j];
    }
    store_f(out, static_cast<long long>(row) * width + c, v);
  }
}

template <typename T>
void pe_dense_input(T* out, const T* planes, const T* pre, const float* pre_bias, int batch,
                    int pre_size, hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(pe_dense_input_kernel<T>, batch * 64, kRowThreads, 0, stream, out, planes, pre, pre_bias, pre_size);
  check_launch("pe_dense_input");
}

template void pe_dense_input<float>(float*, const float*, const float*, const float*, int, int,
                                    hipStream_t);
template void pe_dense_input<__half>(__half*, const __half*, const __half*, const float*, int,
                                     int, hipStream_t);

// Input gating of the attention body's embedding, with the epilogue of the
// product before it where that product left it undone:
//   x = act(x + bias) * mult + add,
// mult and add square-major [64][C] (attention/body.cpp transposes lc0's [C][64]
// at load, so that a row's parameters are contiguous), x [batch*64][C],
// bias [C] or null. One pass over x instead of two (bias_act, then gating).
// Rows of whole 16-byte vectors with 16-byte aligned parameters take a
// thread per vector (x and the parameters read 16 bytes at a time), others
// a block per row, an element at a time.
template <typename T, Activation kAct>
__global__ void input_gating_kernel(T* x, const float* bias, const float* mult, const float* add, int channels,
                                    Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int row = blockIdx.x;  // batch * 64 + square
  const int square = row % 64;
  T* r = x + static_cast<long long>(row) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    const int w = square * channels + c;
    float v = load_f(r, c);
    if (bias != nullptr) v += bias[c];
    store_f(r, c, activate_as<kAct>(v, act) * mult[w] + add[w]);
  }
}

template <typename T, Activation kAct>
__global__ void input_gating_vec_kernel(T* x, const float* bias, const float* mult, const float* add,
                                        long long vectors, int channels, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int V = kVecWidth<T>;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= vectors) return;
  const long long element = i * V;
  const long long row = element / channels;
  const int c = static_cast<int>(element - row * channels);
  const long long w = static_cast<long long>(row % 64) * channels + c;
  float v[V], m[V], a[V], b[V];
  load_vec(x + element, v);
  load_params<V>(mult, w, m);
  load_params<V>(add, w, a);
  load_params<V>(bias, c, b);  // nothing without a bias
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const float e = bias != nullptr ? v[k] + b[k] : v[k];
    v[k] = activate_as<kAct>(e, act) * m[k] + a[k];
  }
  store_vec(x + element, v);
}

template <typename T>
void input_gating(T* x, const float* bias, Activation act, const float* mult, const float* add, int batch,
                  int channels, hipStream_t stream) {
  if (batch == 0) return;
  const bool vector = channels % kVecWidth<T> == 0 && aligned16(x) && aligned16(mult) && aligned16(add) &&
                      (bias == nullptr || aligned16(bias));
  // Fixed at compile time: none (gating alone) and Mish (the nets' default
  // activation, the embedding's).
  with_activation_among<Activation::None, Activation::Mish>(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (vector) {
      const long long vectors = static_cast<long long>(batch) * 64 * channels / kVecWidth<T>;
      constexpr int kThreads = 256;
      gpu_launch(input_gating_vec_kernel<T, kAct>, static_cast<int>(div_up(vectors, kThreads)), kThreads, 0,
                 stream, x, bias, mult, add, vectors, channels, act);
    } else {
      gpu_launch(input_gating_kernel<T, kAct>, batch * 64, kRowThreads, 0, stream, x, bias, mult, add,
                 channels, act);
    }
  });
  check_launch("input_gating");
}

template void input_gating<float>(float*, const float*, Activation, const float*, const float*, int, int,
                                  hipStream_t);
template void input_gating<__half>(__half*, const float*, Activation, const float*, const float*, int, int,
                                   hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
