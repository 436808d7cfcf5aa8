// gemm_small_rows: y[M][N] = act(x[M][K] . W[N][K]^T + b) for few rows (M up
// to kSmallGemmMaxRows), half storage, float accumulation, on NVIDIA's
// mma.sync m16n8k16 tensor-core tiles. Design and measurements:
// native/GEMM_SMALL_ROWS.md.
//
// Why it exists: at batch 1 an attention net's pass is ~120 dense layers of
// 64 rows (one per square) or fewer; cuBLAS takes ~4 us for each where the
// weights (0.05-3.5 MB) stream in well under that. Here a block owns a strip
// of 8 or 16 output columns: its warps first copy the strip's weight rows to
// shared memory (cp.async), and only then wait for the prior kernel
// (dependent launch, gpu_compat.h), so the weight stream overlaps the
// kernel before. Then the warps split K, each running every 16-row tile of
// x against the strip, and reduce through shared memory into one epilogue:
// bias and activation in float, one rounding to half.
//
// AMD: no mma.sync there, so under hipcc this file defines only a stub that
// returns false and the caller runs its BLAS product.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <cstdint>

#include "async_copy.h"
#include "mma_tile.h"
#endif

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace small_gemm {

// Warps splitting K: eight, or four where a warp holds 8 row tiles (their
// partial sums would not fit the shared memory below otherwise).
__host__ __device__ constexpr int warps_for(int m_tiles) { return m_tiles >= 8 ? 4 : 8; }
// k-steps of 16 whose loads a warp issues together before their products:
// the loads of x come from L2, and one round trip per k-step and row tile
// was the first version's undoing (~20 us per 64 x 768 x 768 on an H100).
__host__ __device__ constexpr int group_for(int m_tiles) { return m_tiles >= 8 ? 2 : 4; }
constexpr int kPad = 8;             // halves after each weight row: spreads a tile's rows over the banks
constexpr int kSumPitch = 8 * 2 + 4;  // floats per row of a warp's partial sums (16 columns + padding)
constexpr size_t kSharedLimit = 48 * 1024;  // no opt-in attribute needed (none may be set in a capture)

// Shared memory: the weight strip [cols][K + kPad] half, later reused for
// the warps' partial sums [warps][rows][kSumPitch] float.
inline size_t shared_bytes(int m_tiles, int n_tiles, int K) {
  const size_t strip = sizeof(__half) * 8 * n_tiles * (K + kPad);
  const size_t sums = sizeof(float) * warps_for(m_tiles) * 16 * m_tiles * kSumPitch;
  return strip > sums ? strip : sums;
}

// One block: columns [blockIdx.x * 8 * kNTiles, + 8 * kNTiles) of every row.
// kMTiles: 16-row tiles the accumulators hold (rows <= 16 * kMTiles).
template <int kMTiles, int kNTiles, Activation kAct>
__global__ void __launch_bounds__(warps_for(kMTiles) * 32)
    gemm_small_rows_kernel(__half* y, const __half* x, const __half* w, const float* bias, int M, int N,
                           int K, Activation act) {
  gpu_release_next_grid();
  constexpr int kWarps = warps_for(kMTiles);
  constexpr int kThreads = kWarps * 32;  // mma.sync is a 32-lane instruction
  constexpr int kGroup = group_for(kMTiles);
  extern __shared__ __align__(16) unsigned char shared_raw[];
  constexpr int kCols = 8 * kNTiles;
  const int pitch = K + kPad;
  const int col0 = blockIdx.x * kCols;
  __half* strip = reinterpret_cast<__half*>(shared_raw);

  // The weights do not depend on the prior kernel: in flight before the wait.
  const int chunks = K / 8;  // 16-byte copies per weight row
  for (int i = threadIdx.x; i < kCols * chunks; i += kThreads) {
    const int r = i / chunks, c = (i - r * chunks) * 8;
    copy16_async(strip + r * pitch + c, w + static_cast<size_t>(col0 + r) * K + c);
  }
  commit_copies();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  wait_copies(0);
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int m_tiles = (M + 15) / 16;
  const int steps = K / 16;
  float acc[kMTiles][kNTiles][4] = {};
  // Warp w takes k-steps w, w + kWarps, ...; kGroup of them at a time, all
  // their loads first (rows past M read as zero), then the products.
  for (int s0 = warp; s0 < steps; s0 += kWarps * kGroup) {
    uint32_t a[kGroup][kMTiles][4];
    uint32_t b[kGroup][kNTiles][2];
#pragma unroll
    for (int gi = 0; gi < kGroup; ++gi) {
      const bool in = s0 + gi * kWarps < steps;
      const int k = (s0 + gi * kWarps) * 16 + 2 * t;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        const __half* row = strip + (nt * 8 + g) * pitch + k;
        b[gi][nt][0] = in ? load_half_pair(row) : 0u;
        b[gi][nt][1] = in ? load_half_pair(row + 8) : 0u;
      }
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        const int r0 = mt * 16 + g, r1 = r0 + 8;
        const bool in0 = in && r0 < M, in1 = in && r1 < M;
        const __half* x0 = x + static_cast<size_t>(r0) * K + k;
        const __half* x1 = x + static_cast<size_t>(r1) * K + k;
        a[gi][mt][0] = in0 ? load_half_pair(x0) : 0u;
        a[gi][mt][1] = in1 ? load_half_pair(x1) : 0u;
        a[gi][mt][2] = in0 ? load_half_pair(x0 + 8) : 0u;
        a[gi][mt][3] = in1 ? load_half_pair(x1 + 8) : 0u;
      }
    }
#pragma unroll
    for (int gi = 0; gi < kGroup; ++gi) {
      if (s0 + gi * kWarps >= steps) break;  // the same for the whole warp
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        if (mt >= m_tiles) break;
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt)
          mma_16x8x16(acc[mt][nt], a[gi][mt][0], a[gi][mt][1], a[gi][mt][2], a[gi][mt][3], b[gi][nt][0],
                      b[gi][nt][1]);
      }
    }
  }

  // Each warp's partial sums over its share of K, then their total.
  __syncthreads();  // every warp is done with the strip
  float* sums = reinterpret_cast<float*>(shared_raw);
  const int rows_held = 16 * kMTiles;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
    if (mt >= m_tiles) break;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      float* s = sums + (warp * rows_held + mt * 16 + g) * kSumPitch + nt * 8 + 2 * t;
      s[0] = acc[mt][nt][0];
      s[1] = acc[mt][nt][1];
      s[8 * kSumPitch] = acc[mt][nt][2];
      s[8 * kSumPitch + 1] = acc[mt][nt][3];
    }
  }
  __syncthreads();
  constexpr int kPairs = kCols / 2;
  for (int i = threadIdx.x; i < M * kPairs; i += kThreads) {
    const int r = i / kPairs, c = (i - r * kPairs) * 2;
    float v0 = 0.0f, v1 = 0.0f;
#pragma unroll
    for (int wi = 0; wi < kWarps; ++wi) {
      const float* s = sums + (wi * rows_held + r) * kSumPitch + c;
      v0 += s[0];
      v1 += s[1];
    }
    if (bias) {
      v0 += bias[col0 + c];
      v1 += bias[col0 + c + 1];
    }
    *reinterpret_cast<__half2*>(y + static_cast<size_t>(r) * N + col0 + c) =
        __floats2half2_rn(activate_as<kAct>(v0, act), activate_as<kAct>(v1, act));
  }
}

template <int kMTiles, int kNTiles>
void launch(hipStream_t stream, int M, int N, int K, const __half* x, const __half* w, const float* bias,
            Activation act, __half* y) {
  const int blocks = N / (8 * kNTiles);
  const int threads = warps_for(kMTiles) * 32;
  const size_t shared = shared_bytes(kMTiles, kNTiles, K);
  with_activation(act, [&](auto tag) {
    constexpr Activation kAct = decltype(tag)::value;
    gpu_launch(gemm_small_rows_kernel<kMTiles, kNTiles, kAct>, blocks, threads, shared, stream, y, x, w,
               bias, M, N, K, act);
  });
  GPU_CHECK_LAUNCH();
}

template <int kNTiles>
void launch_rows(hipStream_t stream, int M, int N, int K, const __half* x, const __half* w,
                 const float* bias, Activation act, __half* y) {
  if (M <= 16) launch<1, kNTiles>(stream, M, N, K, x, w, bias, act, y);
  else if (M <= 32) launch<2, kNTiles>(stream, M, N, K, x, w, bias, act, y);
  else if (M <= 64) launch<4, kNTiles>(stream, M, N, K, x, w, bias, act, y);
  else launch<8, kNTiles>(stream, M, N, K, x, w, bias, act, y);
}

}  // namespace small_gemm

bool gemm_small_rows(hipStream_t stream, const DeviceInfo& device, int M, int N, int K, const void* x,
                     const void* w, const float* bias, Activation act, void* y) {
  using namespace small_gemm;
  if (!device.mma_fp16 || device.warp_size != 32) return false;
  if (M < 1 || M > kSmallGemmMaxRows || N < 8 || N % 8 != 0 || K < 16 || K % 16 != 0) return false;
  if (!aligned(x, 4) || !aligned(y, 4) || !aligned(w, 16)) return false;
  const int m_tiles = (M + 15) / 16 <= 1 ? 1 : (M + 15) / 16 <= 2 ? 2 : (M + 15) / 16 <= 4 ? 4 : 8;
  // Strips of 16 columns share each x load between two tiles; strips of 8
  // give twice the blocks, for narrow outputs or K too deep for a 16-column
  // strip in shared memory.
  const bool wide = N % 16 == 0 && N / 16 >= device.multiprocessors / 2 &&
                    shared_bytes(m_tiles, 2, K) <= kSharedLimit;
  if (wide) {
    launch_rows<2>(stream, M, N, K, static_cast<const __half*>(x), static_cast<const __half*>(w), bias, act,
                   static_cast<__half*>(y));
    return true;
  }
  if (shared_bytes(m_tiles, 1, K) > kSharedLimit) return false;
  launch_rows<1>(stream, M, N, K, static_cast<const __half*>(x), static_cast<const __half*>(w), bias, act,
                 static_cast<__half*>(y));
  return true;
}

#else  // AMD: no mma.sync (see the header comment).

bool gemm_small_rows(hipStream_t, const DeviceInfo&, int, int, int, const void*, const void*, const float*,
                     Activation, void*) {
  return false;
}

#endif

}  // namespace lc0rocm
