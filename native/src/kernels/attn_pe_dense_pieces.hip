// Input of PE_DENSE's preprocessing dense layer: the 12 piece planes of the
// newest board arranged per square, planes [batch][64][112] -> [batch][64*12].
// One thread per output value; the row math is 32-bit (rows < 2^31 / 12).
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

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

}  // namespace attn
}  // namespace lc0rocm
