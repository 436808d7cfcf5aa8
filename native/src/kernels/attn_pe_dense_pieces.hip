// Input of PE_DENSE's preprocessing dense layer: the 12 piece planes of the
// newest board arranged per square, planes [batch][64][112] -> [batch][64*12].
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void pe_dense_pieces_kernel(T* out, const T* planes, long long total) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // index in out
  if (i >= total) return;
  const int plane = (int)(i % 12);
  const long long row = i / 12;  // batch * 64 + square
  out[i] = planes[row * kInputPlanes + plane];
}

template <typename T>
void pe_dense_pieces(T* out, const T* planes, int batch, hipStream_t stream) {
  long long total = (long long)batch * 64 * 12;
  if (total == 0) return;
  const int block = 256;
  pe_dense_pieces_kernel<T><<<div_up(total, block), block, 0, stream>>>(out, planes, total);
  check_launch("pe_dense_pieces");
}

template void pe_dense_pieces<float>(float*, const float*, int, hipStream_t);
template void pe_dense_pieces<__half>(__half*, const __half*, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
