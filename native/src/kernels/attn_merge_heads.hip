// Heads back together: in [batch][heads][64][depth] -> out [batch*64][heads*depth].
// One block per output row, 32-bit index math within the row.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void merge_heads_kernel(T* out, const T* in, int heads, int depth) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int row = blockIdx.x;  // batch * 64 + square
  const int n = row / 64, square = row % 64;
  const int d_model = heads * depth;
  T* dst = out + static_cast<long long>(row) * d_model;
  for (int col = threadIdx.x; col < d_model; col += blockDim.x) {
    const int head = col / depth, dim = col - head * depth;
    dst[col] = in[(static_cast<long long>(n * heads + head) * 64 + square) * depth + dim];
  }
}

template <typename T>
void merge_heads(T* out, const T* in, int batch, int heads, int depth, hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(merge_heads_kernel<T>, batch * 64, kRowThreads, 0, stream, out, in, heads, depth);
  check_launch("merge_heads");
}

template void merge_heads<float>(float*, const float*, int, int, int, hipStream_t);
template void merge_heads<__half>(__half*, const __half*, int, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
