// Input gating of the attention body's embedding: x = x * mult + add, with
// mult and add square-major [64][C] (attention.cpp transposes lc0's [C][64]
// at load, so that a row's parameters are contiguous), x [batch*64][C].
// One block per row.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void input_gating_kernel(T* x, const float* mult, const float* add, int channels) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int row = blockIdx.x;  // batch * 64 + square
  const int square = row % 64;
  T* r = x + static_cast<long long>(row) * channels;
  for (int c = threadIdx.x; c < channels; c += blockDim.x) {
    const int w = square * channels + c;
    store_f(r, c, load_f(r, c) * mult[w] + add[w]);
  }
}

template <typename T>
void input_gating(T* x, const float* mult, const float* add, int batch, int channels,
                  hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(input_gating_kernel<T>, batch * 64, kRowThreads, 0, stream, x, mult, add, channels);
  check_launch("input_gating");
}

template void input_gating<float>(float*, const float*, const float*, int, int, hipStream_t);
template void input_gating<__half>(__half*, const float*, const float*, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
