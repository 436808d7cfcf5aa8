// gemv_rows: y[M][N] = act(x[M][K] . W[N][K]^T + b) for a few rows (M up to
// limits::kGemvMaxRows), half storage, float accumulation. Design and measurements:
// native/docs/GEMV_ROWS.md.
//
// Why it exists: at batch 1 smolgen's per-position layers (t82: 2,048 -> 256
// and 256 -> 6,144) and the heads' flat layers are products of one row.
// cuBLAS takes ~4.2 us for each (H100) where a row of weights per warp,
// all its loads in flight at once, is one trip to memory.
//
// Plain HIP: the same source for NVIDIA and AMD (the warp width is warpSize).
#include <cstdint>
#include <type_traits>

#include "../attention_device.h"
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {
namespace gemv {

constexpr int kThreads = 256;
constexpr int kVecHalves = 8;      // a 16-byte vector of halves
constexpr int kChunkVecs = 8;      // weight vectors per lane in flight at once
constexpr size_t kSharedLimit = 48 * 1024;  // no opt-in attribute (a graph capture could not set one)

union Vec8 {
  uint4 raw;
  __half h[kVecHalves];
};

// One warp per output column: the first chunk of its weight row goes out
// before anything waits (weights are no kernel's output), then the block
// copies x to shared memory, and each lane sums its vectors (lane, lane +
// warpSize, ...) of every row; a warp sum per row ends it.
template <int kRows>
__global__ void __launch_bounds__(kThreads)
    gemv_rows_kernel(__half* y, const __half* x, const __half* w, const float* bias, Activation act, int N, int K) {
  extern __shared__ uint4 shared_raw[];
  const __half* xs = reinterpret_cast<const __half*>(shared_raw);  // [kRows][K]
  const int lanes = warpSize, lane = threadIdx.x % lanes, warp = threadIdx.x / lanes;
  const int col = blockIdx.x * (blockDim.x / lanes) + warp;
  const int vecs = K / kVecHalves;
  const uint4* w_row = reinterpret_cast<const uint4*>(w + static_cast<size_t>(col < N ? col : N - 1) * K);
  Vec8 chunk[kChunkVecs];
#pragma unroll
  for (int c = 0; c < kChunkVecs; ++c) {
    const int vi = lane + c * lanes;
    if (vi < vecs) chunk[c].raw = w_row[vi];
  }
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // x is the prior kernel's output

  const uint4* from = reinterpret_cast<const uint4*>(x);
  for (int i = threadIdx.x; i < kRows * vecs; i += blockDim.x) shared_raw[i] = from[i];
  __syncthreads();
  if (col >= N) return;

  float acc[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0f;
  for (int base = 0; base < vecs; base += kChunkVecs * lanes) {
    if (base > 0) {
#pragma unroll
      for (int c = 0; c < kChunkVecs; ++c) {
        const int vi = base + lane + c * lanes;
        if (vi < vecs) chunk[c].raw = w_row[vi];
      }
    }
#pragma unroll
    for (int c = 0; c < kChunkVecs; ++c) {
      const int vi = base + lane + c * lanes;
      if (vi >= vecs) continue;
      float wf[kVecHalves];
#pragma unroll
      for (int k = 0; k < kVecHalves; ++k) wf[k] = __half2float(chunk[c].h[k]);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        Vec8 x8;
        x8.raw = reinterpret_cast<const uint4*>(xs + r * K)[vi];
#pragma unroll
        for (int k = 0; k < kVecHalves; ++k) acc[r] += wf[k] * __half2float(x8.h[k]);
      }
    }
  }
  const float b = bias ? bias[col] : 0.0f;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const float sum = attn::warp_sum(acc[r]);
    if (lane == r) y[static_cast<size_t>(r) * N + col] = __float2half_rn(activate(sum + b, act));
  }
}

}  // namespace gemv

bool gemv_rows(hipStream_t stream, const DeviceInfo& device, int M, int N, int K, const void* x, const void* w,
               const float* bias, Activation act, void* y) {
  using namespace gemv;
  static_assert(kVecHalves == limits::kGemvVecHalves && kSharedLimit == limits::kDefaultShared,
                "plan/limits.h's shapes");
  if (!limits::gemv_rows_fits(device, M, N, K) || !aligned16(x) || !aligned16(w)) return false;
  const int lanes = device.warp_size;  // row r's output is written by lane r
  const int warps = kThreads / lanes;
  const dim3 grid((N + warps - 1) / warps);
  const size_t shared = sizeof(__half) * M * static_cast<size_t>(K);
  auto run = [&](auto rows) {
    constexpr int kRows = decltype(rows)::value;
    gpu_launch(gemv_rows_kernel<kRows>, grid, dim3(kThreads), shared, stream, static_cast<__half*>(y),
               static_cast<const __half*>(x), static_cast<const __half*>(w), bias, act, N, K);
  };
  static_assert(limits::kGemvMaxRows == 4, "one instantiation per row count below");
  switch (M) {
    case 1: run(std::integral_constant<int, 1>{}); break;
    case 2: run(std::integral_constant<int, 2>{}); break;
    case 3: run(std::integral_constant<int, 3>{}); break;
    default: run(std::integral_constant<int, 4>{}); break;
  }
  GPU_CHECK_LAUNCH();
  return true;
}

}  // namespace lc0rocm
