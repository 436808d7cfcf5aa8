// Input gating of the attention body's embedding: x = x * mult + add, with
// mult and add stored channel-major [C][64] (lc0's layout), x [batch*64][C].
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void input_gating_kernel(T* x, const float* mult, const float* add, long long total,
                                    int channels) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int c = (int)(i % channels);
  const int square = (int)((i / channels) % 64);
  const int w = c * 64 + square;
  store_f(x, i, load_f(x, i) * mult[w] + add[w]);
}

template <typename T>
void input_gating(T* x, const float* mult, const float* add, int batch, int channels,
                  hipStream_t stream) {
  long long total = (long long)batch * 64 * channels;
  if (total == 0) return;
  const int block = 256;
  input_gating_kernel<T><<<div_up(total, block), block, 0, stream>>>(x, mult, add, total,
                                                                      channels);
  check_launch("input_gating");
}

template void input_gating<float>(float*, const float*, const float*, int, int, hipStream_t);
template void input_gating<__half>(__half*, const float*, const float*, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
