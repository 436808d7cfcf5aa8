// Bias add of the fused Q|K|V projection and split into heads:
// qkv [batch*64][3*heads*depth] -> q, k, v [batch][heads][64][depth], so that
// the per-head products run as one strided batched GEMM each.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void split_heads_kernel(T* q, T* k, T* v, const T* qkv, const float* bias,
                                   long long total, int heads, int depth) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // index in qkv
  if (i >= total) return;
  const int d_model = heads * depth;
  const int col = (int)(i % (3 * d_model));
  const long long row = i / (3 * d_model);  // batch * 64 + square
  const int which = col / d_model;          // 0 q, 1 k, 2 v
  const int head = (col % d_model) / depth;
  const int dim = col % depth;
  const long long n = row / 64;
  const int square = (int)(row % 64);
  float val = load_f(qkv, i) + bias[col];
  T* dst = which == 0 ? q : (which == 1 ? k : v);
  store_f(dst, ((n * heads + head) * 64 + square) * depth + dim, val);
}

template <typename T>
void split_heads(T* q, T* k, T* v, const T* qkv, const float* bias, int batch, int heads,
                 int depth, hipStream_t stream) {
  long long total = (long long)batch * 64 * 3 * heads * depth;
  if (total == 0) return;
  const int block = 256;
  split_heads_kernel<T><<<div_up(total, block), block, 0, stream>>>(q, k, v, qkv, bias, total,
                                                                     heads, depth);
  check_launch("split_heads");
}

template void split_heads<float>(float*, float*, float*, const float*, const float*, int, int,
                                 int, hipStream_t);
template void split_heads<__half>(__half*, __half*, __half*, const __half*, const float*, int,
                                  int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
