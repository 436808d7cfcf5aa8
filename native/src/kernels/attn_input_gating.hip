// Input gating of the attention body's embedding, with the epilogue of the
// product before it where that product left it undone:
//   x = act(x + bias) * mult + add,
// mult and add square-major [64][C] (attention.cpp transposes lc0's [C][64]
// at load, so that a row's parameters are contiguous), x [batch*64][C],
// bias [C] or null. One pass over x instead of two (bias_act, then gating).
// Rows of whole 16-byte vectors with 16-byte aligned parameters take a
// thread per vector (x and the parameters read 16 bytes at a time), others
// a block per row, an element at a time.
#include "../attention_device.h"
#include "aligned.h"

namespace lc0rocm {
namespace attn {

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
