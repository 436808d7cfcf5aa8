// winograd_input: the input transform of a 3x3 convolution by Winograd
// F(4x4, 3x3). The 8x8 board is 2 x 2 tiles of 4x4 outputs; tile (ty, tx)
// reads the 6x6 window of rows 4ty-1 .. 4ty+4 (files likewise), zero off the
// board, and becomes V = B^T d B (36 values). Layout of v:
// [36][n * 4][C], element (t, position * 4 + ty * 2 + tx, c), t = 6 xi + nu,
// so that the 36 products V_t . U_t are one strided-batched GEMM. Six
// threads per (position, tile, channel) below batch 256, one from there on;
// neighbouring threads read and write neighbouring channels. Design note: native/docs/WINOGRAD.md.
#include "../gpu_compat.h"
#include "ops.h"
#include "winograd_transforms.h"

namespace lc0rocm {

// A block takes kWinogradGroup consecutive (position, tile, channel) items
// with six groups of kWinogradGroup threads: thread (w, k) handles item k
// and, first, window column w (six loads, t1 = B^T d for that column, to shared memory), then
// row w (V's row from t1, six stores). Six times the threads of one per
// item keep six times the loads in flight: the transform is bound by them.

template <typename T>
__global__ void __launch_bounds__(kWinogradSpreadThreads)
winograd_input_spread_kernel(long long total, int channels, const T* x, T* v) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using namespace winograd_detail;
  __shared__ float t1[6][6][kWinogradGroup];   // [row a][column b][item]
  const int k = threadIdx.x % kWinogradGroup, w = threadIdx.x / kWinogradGroup;
  const long long i = blockIdx.x * static_cast<long long>(kWinogradGroup) + k;
  const bool live = i < total;
  const int c = live ? static_cast<int>(i % channels) : 0;
  const long long row = live ? i / channels : 0;     // position * 4 + tile
  const int tile = static_cast<int>(row % 4);
  const long long pos = row / 4;
  const int rank0 = (tile / 2) * 4 - 1, file0 = (tile % 2) * 4 - 1;

  if (live) {                                        // column w of the window
    const T* xp = x + pos * 64 * channels + c;
    const int file = file0 + w;
    float col[6], out[6];
#pragma unroll
    for (int a = 0; a < 6; ++a) {
      const int rank = rank0 + a;
      const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
      col[a] = on ? to_float(xp[(rank * 8 + file) * channels]) : 0.0f;
    }
    input_1d(col, out);
#pragma unroll
    for (int a = 0; a < 6; ++a) t1[a][w][k] = out[a];
  }
  __syncthreads();
  if (!live) return;
  float r[6], out[6];                                // row w of V = t1 B
#pragma unroll
  for (int b = 0; b < 6; ++b) r[b] = t1[w][b][k];
  input_1d(r, out);
  const long long plane = total;                     // elements per t: n * 4 * C
  T* vp = v + row * channels + c;
#pragma unroll
  for (int b = 0; b < 6; ++b) vp[(w * 6 + b) * plane] = from_float<T>(out[b]);
}

// One thread per item: enough loads in flight from batch 256 on, where
// the spread kernel above measured even (256) or slower (512).
template <typename T>
__global__ void winograd_input_item_kernel(long long total, int channels, const T* x, T* v) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using namespace winograd_detail;
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int c = static_cast<int>(i % channels);
  const long long row = i / channels;                 // position * 4 + tile
  const int tile = static_cast<int>(row % 4);
  const long long pos = row / 4;
  const int rank0 = (tile / 2) * 4 - 1, file0 = (tile % 2) * 4 - 1;
  const T* xp = x + pos * 64 * channels + c;

  float d[6][6];
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    const int rank = rank0 + a;
#pragma unroll
    for (int b = 0; b < 6; ++b) {
      const int file = file0 + b;
      const bool on = rank >= 0 && rank < 8 && file >= 0 && file < 8;
      d[a][b] = on ? to_float(xp[(rank * 8 + file) * channels]) : 0.0f;
    }
  }
  // Columns first (t1 = B^T d), then rows (V = t1 B).
  float t1[6][6];
#pragma unroll
  for (int b = 0; b < 6; ++b) {
    float col[6], out[6];
#pragma unroll
    for (int a = 0; a < 6; ++a) col[a] = d[a][b];
    input_1d(col, out);
#pragma unroll
    for (int a = 0; a < 6; ++a) t1[a][b] = out[a];
  }
  const long long plane = total;                      // elements per t: n * 4 * C
  T* vp = v + row * channels + c;
#pragma unroll
  for (int a = 0; a < 6; ++a) {
    float out[6];
    input_1d(t1[a], out);
#pragma unroll
    for (int b = 0; b < 6; ++b) vp[(a * 6 + b) * plane] = from_float<T>(out[b]);
  }
}

template <typename T>
static void launch_winograd_input(hipStream_t stream, int n, int channels, const T* x, T* v) {
  const long long total = static_cast<long long>(n) * 4 * channels;
  if (n <= kWinogradSpreadMaxBatch)
    gpu_launch(winograd_input_spread_kernel<T>, blocks_for(total, kWinogradGroup), kWinogradSpreadThreads, 0, stream,
               total, channels, x, v);
  else
    gpu_launch(winograd_input_item_kernel<T>, blocks_for(total), kBlockThreads, 0, stream, total, channels, x, v);
}

void winograd_input(hipStream_t stream, DType dt, int n, int channels, const void* x, void* v) {
  if (n == 0 || channels == 0) return;
  if (dt == DType::F32)
    launch_winograd_input<float>(stream, n, channels, static_cast<const float*>(x), static_cast<float*>(v));
  else
    launch_winograd_input<half>(stream, n, channels, static_cast<const half*>(x), static_cast<half*>(v));
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
