// Bias add of the fused Q|K|V projection and split into heads:
// qkv [batch*64][3*heads*depth] -> q, k, v [batch][heads][64][depth], so that
// the per-head products run as one strided batched GEMM each. One block per
// row (square of a position), 32-bit index math within the row.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void split_heads_kernel(T* q, T* k, T* v, const T* qkv, const float* bias, int heads,
                                   int depth) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int row = blockIdx.x;  // batch * 64 + square
  const int n = row / 64, square = row % 64;
  const int d_model = heads * depth;
  const T* src = qkv + static_cast<long long>(row) * 3 * d_model;
  for (int col = threadIdx.x; col < 3 * d_model; col += blockDim.x) {
    const int which = col / d_model;  // 0 q, 1 k, 2 v
    const int within = col - which * d_model;
    const int head = within / depth, dim = within - head * depth;
    T* dst = which == 0 ? q : (which == 1 ? k : v);
    const long long j = (static_cast<long long>(n * heads + head) * 64 + square) * depth + dim;
    store_f(dst, j, load_f(src, col) + bias[col]);
  }
}

template <typename T>
void split_heads(T* q, T* k, T* v, const T* qkv, const float* bias, int batch, int heads,
                 int depth, hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(split_heads_kernel<T>, batch * 64, kRowThreads, 0, stream, q, k, v, qkv, bias, heads, depth);
  check_launch("split_heads");
}

template void split_heads<float>(float*, float*, float*, const float*, const float*, int, int,
                                 int, hipStream_t);
template void split_heads<__half>(__half*, __half*, __half*, const __half*, const float*, int,
                                  int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
