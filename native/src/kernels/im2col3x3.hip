// im2col3x3: the 3x3 neighbourhoods of every square, as GEMM columns.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

// One thread per output element; channel fastest, so reads of x and writes
// of columns are both contiguous across a warp.
template <typename T>
__global__ void im2col3x3_kernel(int n, int channels, const T* x, T* columns) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)n * 64 * 9 * channels;
  if (i >= total) return;
  int c = i % channels;
  int tap = (i / channels) % 9;
  long long row = i / (9LL * channels);  // position * 64 + square
  int square = row % 64;
  long long pos = row / 64;
  int rank = square / 8 + tap / 3 - 1;
  int file = square % 8 + tap % 3 - 1;
  T v = from_float<T>(0.0f);
  if (rank >= 0 && rank < 8 && file >= 0 && file < 8)
    v = x[(pos * 64 + rank * 8 + file) * channels + c];
  columns[i] = v;
}

void im2col3x3(hipStream_t stream, DType dt, int n, int channels, const void* x, void* columns) {
  long long total = (long long)n * 64 * 9 * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    im2col3x3_kernel<float><<<blocks_for(total), kBlockThreads, 0, stream>>>(n, channels, (const float*)x, (float*)columns);
  else
    im2col3x3_kernel<half><<<blocks_for(total), kBlockThreads, 0, stream>>>(n, channels, (const half*)x, (half*)columns);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
