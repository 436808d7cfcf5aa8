// The unfused attention of heads too deep for the fused kernels (the
// batched products between them run on BLAS: attention/encoder.cpp): the
// heads split out of the Q|K|V product, softmax over each row of 64 logits,
// the heads merged back.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

// Bias add of the fused Q|K|V projection and split into heads:
// qkv [batch*64][3*heads*depth] -> q, k, v [batch][heads][64][depth], so that
// the per-head products run as one strided batched GEMM each. One block per
// row (square of a position), 32-bit index math within the row.
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

// Softmax over rows of 64 attention logits, with smolgen's generated logits
// added first when given (row = query square of one head of one position).
// One warp per row: 64 / warpSize values per lane (2 on a 32-wide warp, 1 on
// a 64-wide one), max and sum by warp shuffles.
constexpr int kSoftmaxThreads = 256;

template <typename T>
__global__ void softmax64_kernel(T* out, const T* in, const T* add, int rows) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int lanes = warpSize;
  const int per_lane = 64 / lanes;  // 1 or 2
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int row = blockIdx.x * (blockDim.x / lanes) + warp;
  if (row >= rows) return;  // the whole warp leaves together
  const long long base = static_cast<long long>(row) * 64;
  float x[2];
  float m = -INFINITY;
  for (int j = 0; j < per_lane; ++j) {
    const long long i = base + lane + j * lanes;
    x[j] = load_f(in, i);
    if (add != nullptr) x[j] += load_f(add, i);
    m = fmaxf(m, x[j]);
  }
  m = warp_max(m);
  float s = 0.0f;
  for (int j = 0; j < per_lane; ++j) {
    x[j] = expf(x[j] - m);
    s += x[j];
  }
  const float inv = 1.0f / warp_sum(s);
  for (int j = 0; j < per_lane; ++j) store_f(out, base + lane + j * lanes, x[j] * inv);
}

template <typename T>
void softmax64(T* out, const T* in, const T* add, int rows, int warp_size, hipStream_t stream) {
  if (rows == 0) return;
  check_warp_size(warp_size);
  const int rows_per_block = kSoftmaxThreads / warp_size;
  gpu_launch(softmax64_kernel<T>, div_up(rows, rows_per_block), kSoftmaxThreads, 0, stream, out, in, add, rows);
  check_launch("softmax64");
}

template void softmax64<float>(float*, const float*, const float*, int, int, hipStream_t);
template void softmax64<__half>(__half*, const __half*, const __half*, int, int, hipStream_t);

// Heads back together: in [batch][heads][64][depth] -> out [batch*64][heads*depth].
// One block per output row, 32-bit index math within the row.
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
