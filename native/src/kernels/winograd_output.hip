// winograd_output: the output transform of a 3x3 convolution by Winograd
// F(4x4, 3x3), with the layer's epilogue. m [36][n * 4][C] holds the 36
// products M_t = V_t . U_t (winograd_input.hip's layout); each tile's 4x4
// outputs are Y = A^T M A, then y = act(Y + bias + residual) in the library's
// [n][64][C]. Six threads per (position, tile, channel) below batch 256, one
// from there on. Design note: native/docs/WINOGRAD.md.
#include "../gpu_compat.h"
#include "ops.h"
#include "winograd_transforms.h"

namespace lc0rocm {

// A block takes kWinogradGroup consecutive (position, tile, channel) items
// with six groups of kWinogradGroup threads: thread (w, k) handles item k
// and, first, row w of M (six loads, t1 = M A for that row, to shared
// memory), then, for w < 4, output column w (four outputs with the
// epilogue). Six times the threads of one per item keep six times the loads
// in flight.

// kAct: the activation fixed at compile time, or kAnyActivation for act.
template <typename T, Activation kAct>
__global__ void __launch_bounds__(kWinogradSpreadThreads)
winograd_output_spread_kernel(long long total, int channels, const T* m, const float* bias, const T* residual,
                              T* y,
                       Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using namespace winograd_detail;
  __shared__ float t1[6][4][kWinogradGroup];   // [row a][column j][item]
  const int k = threadIdx.x % kWinogradGroup, w = threadIdx.x / kWinogradGroup;
  const long long i = blockIdx.x * static_cast<long long>(kWinogradGroup) + k;
  const bool live = i < total;
  const int c = live ? static_cast<int>(i % channels) : 0;
  const long long row = live ? i / channels : 0;     // position * 4 + tile
  const long long plane = total;                     // elements per t: n * 4 * C

  if (live) {                                        // row w of M
    const T* mp = m + row * channels + c;
    float r[6], out[4];
#pragma unroll
    for (int b = 0; b < 6; ++b) r[b] = to_float(mp[(w * 6 + b) * plane]);
    output_1d(r, out);
#pragma unroll
    for (int j = 0; j < 4; ++j) t1[w][j][k] = out[j];
  }
  __syncthreads();
  if (!live || w >= 4) return;
  const int j = w;                                   // output column j = Y's file within the tile
  float col[6], out[4];
#pragma unroll
  for (int a = 0; a < 6; ++a) col[a] = t1[a][j][k];
  output_1d(col, out);
  const int tile = static_cast<int>(row % 4);
  const long long pos = row / 4;
  const int rank0 = (tile / 2) * 4, file0 = (tile % 2) * 4;
  const float b = bias ? bias[c] : 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const long long at = (pos * 64 + (rank0 + q) * 8 + file0 + j) * channels + c;
    float v = out[q] + b;
    if (residual) v += to_float(residual[at]);
    y[at] = from_float<T>(activate_as<kAct>(v, act));
  }
}

// One thread per item: enough loads in flight from batch 256 on, where
// the spread kernel above measured even (256) or slower (512).
template <typename T, Activation kAct>
__global__ void winograd_output_item_kernel(long long total, int channels, const T* m, const float* bias,
                                       const T* residual, T* y, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
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
      y[at] = from_float<T>(activate_as<kAct>(v, act));
    }
  }
}

template <typename T>
static void launch_winograd_output(hipStream_t stream, int n, int channels, const T* m, const float* bias,
                                   const T* residual, T* y, Activation act) {
  const long long total = static_cast<long long>(n) * 4 * channels;
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    if (n <= kWinogradSpreadMaxBatch)
      gpu_launch(winograd_output_spread_kernel<T, kAct>, blocks_for(total, kWinogradGroup), kWinogradSpreadThreads, 0,
                 stream, total, channels, m, bias, residual, y, act);
    else
      gpu_launch(winograd_output_item_kernel<T, kAct>, blocks_for(total), kBlockThreads, 0, stream, total, channels,
                 m, bias, residual, y, act);
  });
}

void winograd_output(hipStream_t stream, DType dt, int n, int channels, const void* m, const float* bias,
                     const void* residual, void* y, Activation act) {
  if (n == 0 || channels == 0) return;
  if (dt == DType::F32)
    launch_winograd_output<float>(stream, n, channels, static_cast<const float*>(m), bias,
                                  static_cast<const float*>(residual), static_cast<float*>(y), act);
  else
    launch_winograd_output<half>(stream, n, channels, static_cast<const half*>(m), bias,
                                 static_cast<const half*>(residual), static_cast<half*>(y), act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
