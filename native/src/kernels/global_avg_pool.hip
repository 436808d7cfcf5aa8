// global_avg_pool: mean over the 64 squares of each channel (SE squeeze).
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

// One thread per (position, channel): neighbouring threads read neighbouring
// channels, so every step of the loop is a contiguous row read.
template <typename T>
__global__ void global_avg_pool_kernel(int n, int channels, const T* x, T* out) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)n * channels) return;
  int c = i % channels;
  long long pos = i / channels;
  const T* p = x + pos * 64 * channels + c;
  float sum = 0.0f;
  for (int s = 0; s < 64; ++s) sum += to_float(p[(long long)s * channels]);
  out[i] = from_float<T>(sum * (1.0f / 64.0f));
}

void global_avg_pool(hipStream_t stream, DType dt, int n, int channels, const void* x, void* out) {
  long long total = (long long)n * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    gpu_launch(global_avg_pool_kernel<float>, blocks_for(total), kBlockThreads, 0, stream, n, channels,
               (const float*)x, (float*)out);
  else
    gpu_launch(global_avg_pool_kernel<half>, blocks_for(total), kBlockThreads, 0, stream, n, channels, (const half*)x,
               (half*)out);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
