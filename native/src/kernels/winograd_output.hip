// winograd_output: the output transform of a 3x3 convolution by Winograd
// F(4x4, 3x3), with the layer's epilogue. m [36][n * 4][C] holds the 36
// products M_t = V_t . U_t (winograd_input.hip's layout); each tile's 4x4
// outputs are Y = A^T M A, then y = act(Y + bias + residual) in the library's
// [n][64][C]. One thread per (position, tile, channel). Design note:
// native/WINOGRAD.md.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {
namespace winograd_detail {

// o = A^T m for six values.
__device__ __forceinline__ void output_1d(const float m[6], float o[4]) {
  o[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  o[1] = m[1] - m[2] + 2.0f * (m[3] - m[4]);
  o[2] = m[1] + m[2] + 4.0f * (m[3] + m[4]);
  o[3] = m[1] - m[2] + 8.0f * (m[3] - m[4]) + m[5];
}

}  // namespace winograd_detail

template <typename T>
__global__ void winograd_output_kernel(long long total, int channels, const T* m, const float* bias,
                                       const T* residual, T* y, Activation act) {
  using namespace winograd_detail;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int c = static_cast<int>(i % channels);
  const long long row = i / channels;                 // position * 4 + tile
  const int tile = static_cast<int>(row % 4);
  const long long pos = row / 4;
  const T* mp = m + row * channels + c;
  const long long plane = total;                      // elements per t: n * 4 * C

  // Rows first (t1 = M A, 6 x 4), then columns (Y = A^T t1).
  float t1[6][4];
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    float r[6];
#pragma unroll
    for (int b = 0; b < 6; ++b) r[b] = to_float(mp[(a * 6 + b) * plane]);
    output_1d(r, t1[a]);
  }
  const float b = bias ? bias[c] : 0.0f;
  const long long base = pos * 64;
  const int rank0 = (tile / 2) * 4, file0 = (tile % 2) * 4;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float col[6], out[4];
#pragma unroll
    for (int a = 0; a < 6; ++a) col[a] = t1[a][j];
    output_1d(col, out);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const long long at = (base + (rank0 + k) * 8 + file0 + j) * channels + c;
      float v = out[k] + b;
      if (residual) v += to_float(residual[at]);
      y[at] = from_float<T>(activate(v, act));
    }
  }
}

void winograd_output(hipStream_t stream, DType dt, int n, int channels, const void* m, const float* bias,
                     const void* residual, void* y, Activation act) {
  const long long total = static_cast<long long>(n) * 4 * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    winograd_output_kernel<float><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        total, channels, static_cast<const float*>(m), bias, static_cast<const float*>(residual),
        static_cast<float*>(y), act);
  else
    winograd_output_kernel<half><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        total, channels, static_cast<const half*>(m), bias, static_cast<const half*>(residual),
        static_cast<half*>(y), act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
