// expand_planes: lc0's packed input (mask, value per plane) -> planes.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

// One thread per (position, square, plane); plane is the fastest index so
// writes are contiguous in the square-major layout.
template <typename T>
__global__ void expand_planes_kernel(int n, const uint64_t* masks, const float* values, T* out) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)n * 64 * 112;
  if (i >= total) return;
  int plane = i % 112;
  int square = (i / 112) % 64;
  long long pos = i / (112 * 64);
  uint64_t mask = masks[pos * 112 + plane];
  float v = ((mask >> square) & 1ull) ? values[pos * 112 + plane] : 0.0f;
  out[i] = from_float<T>(v);
}

template <typename T>
__global__ void transpose_planes_kernel(int n, const float* in, T* out) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)n * 64 * 112;
  if (i >= total) return;
  int plane = i % 112;
  int square = (i / 112) % 64;
  long long pos = i / (112 * 64);
  out[i] = from_float<T>(in[(pos * 112 + plane) * 64 + square]);
}

void expand_planes(hipStream_t stream, DType dt, int n, const uint64_t* masks,
                   const float* values, void* planes) {
  long long total = (long long)n * 64 * 112;
  if (total == 0) return;
  if (dt == DType::F32)
    gpu_launch(expand_planes_kernel<float>, blocks_for(total), kBlockThreads, 0, stream, n, masks, values,
               (float*)planes);
  else
    gpu_launch(expand_planes_kernel<half>, blocks_for(total), kBlockThreads, 0, stream, n, masks, values,
               (half*)planes);
  GPU_CHECK_LAUNCH();
}

void transpose_planes(hipStream_t stream, DType dt, int n, const float* planes_in, void* planes) {
  long long total = (long long)n * 64 * 112;
  if (total == 0) return;
  if (dt == DType::F32)
    gpu_launch(transpose_planes_kernel<float>, blocks_for(total), kBlockThreads, 0, stream, n, planes_in,
               (float*)planes);
  else
    gpu_launch(transpose_planes_kernel<half>, blocks_for(total), kBlockThreads, 0, stream, n, planes_in,
               (half*)planes);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
