// Input of the PE_DENSE embedding: each square's 112 plane values followed by
// its pre_size outputs of the preprocessing dense layer (bias added here):
// planes [batch][64][112], pre [batch][64*pre_size] -> [batch*64][112 + pre_size].
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void pe_dense_input_kernel(T* out, const T* planes, const T* pre, const float* pre_bias,
                                      long long total, int pre_size) {
  const int width = kInputPlanes + pre_size;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // index in out
  if (i >= total) return;
  const int c = (int)(i % width);
  const long long row = i / width;
  const long long n = row / 64;
  const int square = (int)(row % 64);
  float v;
  if (c < kInputPlanes) {
    v = load_f(planes, row * kInputPlanes + c);
  } else {
    const int j = square * pre_size + (c - kInputPlanes);
    v = load_f(pre, n * 64 * pre_size + j) + pre_bias[j];
  }
  store_f(out, i, v);
}

template <typename T>
void pe_dense_input(T* out, const T* planes, const T* pre, const float* pre_bias, int batch,
                    int pre_size, hipStream_t stream) {
  long long total = (long long)batch * 64 * (kInputPlanes + pre_size);
  if (total == 0) return;
  const int block = 256;
  pe_dense_input_kernel<T><<<div_up(total, block), block, 0, stream>>>(out, planes, pre, pre_bias,
                                                                        total, pre_size);
  check_launch("pe_dense_input");
}

template void pe_dense_input<float>(float*, const float*, const float*, const float*, int, int,
                                    hipStream_t);
template void pe_dense_input<__half>(__half*, const __half*, const __half*, const float*, int,
                                     int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
