// Softmax over rows of 64 attention logits, with smolgen's generated logits
// added first when given (row = query square of one head of one position).
// One warp per row: 64 / warpSize values per lane (2 on a 32-wide warp, 1 on
// a 64-wide one), max and sum by warp shuffles.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

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

}  // namespace attn
}  // namespace lc0rocm
