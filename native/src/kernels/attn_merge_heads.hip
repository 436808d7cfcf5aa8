// Heads back together: in [batch][heads][64][depth] -> out [batch*64][heads*depth].
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void merge_heads_kernel(T* out, const T* in, long long total, int heads, int depth) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // index in out
  if (i >= total) return;
  const int d_model = heads * depth;
  const int col = (int)(i % d_model);
  const long long row = i / d_model;
  const long long n = row / 64;
  const int square = (int)(row % 64);
  const int head = col / depth;
  const int dim = col % depth;
  out[i] = in[((n * heads + head) * 64 + square) * depth + dim];
}

template <typename T>
void merge_heads(T* out, const T* in, int batch, int heads, int depth, hipStream_t stream) {
  long long total = (long long)batch * 64 * heads * depth;
  if (total == 0) return;
  const int block = 256;
  merge_heads_kernel<T><<<div_up(total, block), block, 0, stream>>>(out, in, total, heads, depth);
  check_launch("merge_heads");
}

template void merge_heads<float>(float*, const float*, int, int, int, hipStream_t);
template void merge_heads<__half>(__half*, const __half*, int, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
