// Softmax over rows of 64 attention logits, with smolgen's generated logits
// added first when given (row = query square of one head of one position).
// 64 threads per row, 4 rows per block; sums through shared memory.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

constexpr int kRowsPerBlock = 4;

template <typename T>
__global__ void softmax64_kernel(T* out, const T* in, const T* add, long long rows) {
  __shared__ float scratch[kRowsPerBlock][64];
  const int col = threadIdx.x;
  const int local_row = threadIdx.y;
  const long long row = blockIdx.x * (long long)kRowsPerBlock + local_row;
  const bool active = row < rows;
  const long long i = row * 64 + col;
  float x = 0.0f;
  if (active) {
    x = load_f(in, i);
    if (add != nullptr) x += load_f(add, i);
  }
  float* s = scratch[local_row];

  s[col] = x;
  __syncthreads();
  for (int half_size = 32; half_size > 0; half_size /= 2) {
    if (col < half_size) s[col] = fmaxf(s[col], s[col + half_size]);
    __syncthreads();
  }
  const float row_max = s[0];
  __syncthreads();

  const float e = expf(x - row_max);
  s[col] = e;
  __syncthreads();
  for (int half_size = 32; half_size > 0; half_size /= 2) {
    if (col < half_size) s[col] += s[col + half_size];
    __syncthreads();
  }
  const float total = s[0];
  if (active) store_f(out, i, e / total);
}

template <typename T>
void softmax64(T* out, const T* in, const T* add, int rows, hipStream_t stream) {
  if (rows == 0) return;
  dim3 block(64, kRowsPerBlock);
  softmax64_kernel<T><<<div_up(rows, kRowsPerBlock), block, 0, stream>>>(out, in, add, rows);
  check_launch("softmax64");
}

template void softmax64<float>(float*, const float*, const float*, int, hipStream_t);
template void softmax64<__half>(__half*, const __half*, const __half*, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
