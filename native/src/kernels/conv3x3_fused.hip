// conv3x3_fused: a whole 3x3 convolution of one position per block, as an
// implicit GEMM on tensor cores (NVIDIA, half storage, float accumulation),
// with its epilogue fused: bias, then optionally the squeeze-excitation unit
// (pool, dense, activation, dense, sigmoid gate), the residual add and the
// activation. Replaces im2col + GEMM + bias_act (and, with SE, pool + 2 x
// (GEMM + bias_act) + se_apply): 1 launch instead of 3 (or 9), and the
// 9x-inflated im2col matrix never touches device memory.
//
// Layout (design note: native/CONV3X3_FUSED.md):
//   x [n][64][cin] half, cin % 16 == 0, cin <= 128
//   w [9 * cin][ldw] half, row tap * cin + c (tap = ky * 3 + kx), ldw % 32 == 0,
//     ldw <= 128, columns cout..ldw-1 zero (the caller pads)
//   y [n][64][cout] half, cout % 8 == 0; residual likewise (may alias y)
// Shared memory, in this order:
//   io     the position's input as a zero-bordered 10 x 10 board
//          [100][cin + 16] half; after the products the same bytes hold the
//          float result [64][ldw + 4]
//   ring   `stages` weight slices of one tap each, [cin][ldw + 16] half,
//          filled by asynchronous copies (cp.async) issued ahead, so that
//          the loads of later taps overlap the products of earlier ones
//   se     SE weights w1, w2 (copied with the first tap), then float scratch
// The 16-half paddings keep every wmma pointer 32-byte aligned and spread
// rows over the banks. Warp r computes rank r: its 8 squares under tap
// (ky, kx) are 8 consecutive padded squares from (r + ky) * 10 + kx, so one
// m8n32k16 A tile per (tap, 16 channels) is a plain strided load.
//
// AMD: nvcuda::wmma does not exist there; this file then only defines a stub
// that returns false and the caller keeps im2col + GEMM (where an MIOpen
// convolution would slot in).
#include <mutex>

#include "../gpu_compat.h"
#include "aligned.h"
#include "async_copy.h"
#include "block_ops.h"
#include "ops.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <mma.h>
#endif

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace conv_fused_detail {
constexpr int kThreads = 256;      // 8 warps of NVIDIA's width (wmma is NVIDIA-only): one per rank
constexpr int kMaxChannels = 128;  // cin, ldw
constexpr int kMaxSeHidden = 256;
constexpr int kInPad = 16;         // halves per padded input square and weight row
constexpr int kOutPad = 4;         // floats per result row
constexpr int kTaps = 9;

__host__ __device__ inline size_t round16(size_t bytes) { return (bytes + 15) / 16 * 16; }

struct Plan {
  size_t io = 0, stage = 0, se_weights = 0, se_scratch = 0;
  int stages = 0;
  __host__ __device__ size_t bytes() const { return io + stages * stage + se_weights + se_scratch; }
};

__host__ __device__ inline Plan plan(int cin, int cout, int ldw, int se_hidden, int stages) {
  Plan p;
  size_t in = sizeof(half) * 100 * (cin + kInPad);
  size_t out = sizeof(float) * 64 * (ldw + kOutPad);
  p.io = round16(in > out ? in : out);
  p.stage = sizeof(half) * cin * (ldw + kInPad);
  if (se_hidden > 0) {
    p.se_weights = round16(sizeof(half) * cout * se_hidden) + round16(sizeof(half) * se_hidden * 2 * cout);
    // pooled [cout], hidden [H], gates [2 cout], partial sums [max(threads, 2 cout)]
    p.se_scratch = sizeof(float) * (cout + se_hidden + 2 * cout + (kThreads > 2 * cout ? kThreads : 2 * cout));
  }
  p.stages = stages;
  return p;
}

// The device's shared-memory limit per block (opt-in), once per device, and
// the kernel allowed to use it.
size_t shared_limit();
}  // namespace conv_fused_detail

namespace wmma = nvcuda::wmma;

// 8 halves (16 bytes) as a vector.
union HalfVec8 {
  uint4 raw;
  half h[8];
};

// rows x row_halves (a multiple of 8) from global (row pitch src_pitch) to
// shared (row pitch dst_pitch), 16 bytes per copy, spread over the block.
__device__ __forceinline__ void copy_rows_async(half* dst, int dst_pitch, const half* src, int src_pitch,
                                                int rows, int row_halves) {
  const int vecs = row_halves / 8;
  for (int i = threadIdx.x; i < rows * vecs; i += blockDim.x) {
    const int r = i / vecs, v = i - r * vecs;
    copy16_async(dst + r * dst_pitch + v * 8, src + static_cast<long long>(r) * src_pitch + v * 8);
  }
}

__global__ void __launch_bounds__(conv_fused_detail::kThreads)
conv3x3_fused_kernel(int cin, int cout, int ldw, int stages, const half* __restrict__ x,
                     const half* __restrict__ w, const float* __restrict__ bias,
                     const half* residual, SeWeights se, half* y, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace conv_fused_detail;
  extern __shared__ __align__(128) unsigned char shared_raw[];
  const int lanes = warpSize;
  const int tid = threadIdx.x, threads = blockDim.x;
  const int warp = tid / lanes;  // = the rank this warp computes
  const long long pos = blockIdx.x;
  const int se_hidden = se.w1 ? se.hidden : 0;
  const Plan pl = plan(cin, cout, ldw, se_hidden, stages);
  const int lds = cin + kInPad, ldb = ldw + kInPad;
  half* ring = reinterpret_cast<half*>(shared_raw + pl.io);
  const int stage_halves = static_cast<int>(pl.stage / sizeof(half));
  half* se_w1 = reinterpret_cast<half*>(shared_raw + pl.io + stages * pl.stage);
  half* se_w2 = se_w1 + round16(sizeof(half) * cout * se_hidden) / sizeof(half);
  float* pooled = reinterpret_cast<float*>(shared_raw + pl.io + stages * pl.stage + pl.se_weights);
  float* hidden = pooled + cout;
  float* gates = hidden + se_hidden;  // [2 * cout]: sigmoid scale, then shift
  float* partial = gates + 2 * cout;

  // 1. Start the copies: the first `stages` taps' weights (one group each,
  // the SE weights with the first), then the board while they fly.
  for (int tap = 0; tap < stages; ++tap) {
    copy_rows_async(ring + tap * stage_halves, ldb, w + static_cast<long long>(tap) * cin * ldw, ldw, cin, ldw);
    if (tap == 0 && se_hidden) {
      // flat copies: cout * H and H * 2 cout are multiples of 8 (cout % 8 == 0)
      copy_rows_async(se_w1, 0, static_cast<const half*>(se.w1), 0, 1, cout * se_hidden);
      copy_rows_async(se_w2, 0, static_cast<const half*>(se.w2), 0, 1, se_hidden * 2 * cout);
    }
    commit_copies();
  }
  half* board = reinterpret_cast<half*>(shared_raw);  // [100][lds]
  const half* xp = x + pos * 64 * cin;
  const int in_vecs = cin / 8;
  for (int i = tid; i < 100 * in_vecs; i += threads) {
    const int sq = i / in_vecs, v = i - sq * in_vecs;
    const int r = sq / 10 - 1, f = sq % 10 - 1;
    uint4 val = make_uint4(0, 0, 0, 0);  // all-zero bits are 0.0 in half
    if (r >= 0 && r < 8 && f >= 0 && f < 8)
      val = reinterpret_cast<const uint4*>(xp + (r * 8 + f) * cin)[v];
    reinterpret_cast<uint4*>(board + sq * lds)[v] = val;
  }

  // 2. The products: rank `warp` x all ldw outputs, K = 9 taps x cin.
  constexpr int kMaxTiles = kMaxChannels / 32;
  const int tiles = ldw / 32;
  wmma::fragment<wmma::accumulator, 8, 32, 16, float> acc[kMaxTiles];
#pragma unroll
  for (int t = 0; t < kMaxTiles; ++t) wmma::fill_fragment(acc[t], 0.0f);
  for (int tap = 0; tap < kTaps; ++tap) {
    // Groups committed so far: taps 0 .. min(8, stages - 1 + tap).
    const int committed = stages + tap < kTaps ? stages + tap : kTaps;
    wait_copies(committed - tap - 1);
    __syncthreads();  // everyone's copies of this tap (and the board) are in
    const half* a_rows = board + ((warp + tap / 3) * 10 + tap % 3) * lds;
    const half* b_tap = ring + (tap % stages) * stage_halves;
    for (int k0 = 0; k0 < cin; k0 += 16) {
      wmma::fragment<wmma::matrix_a, 8, 32, 16, half, wmma::row_major> a;
      wmma::load_matrix_sync(a, a_rows + k0, lds);
#pragma unroll
      for (int t = 0; t < kMaxTiles; ++t) {
        if (t < tiles) {
          wmma::fragment<wmma::matrix_b, 8, 32, 16, half, wmma::row_major> b;
          wmma::load_matrix_sync(b, b_tap + k0 * ldb + t * 32, ldb);
          wmma::mma_sync(acc[t], a, b, acc[t]);
        }
      }
    }
    const int next = tap + stages;
    if (next < kTaps) {
      __syncthreads();  // every warp is done with this stage
      copy_rows_async(ring + (tap % stages) * stage_halves, ldb, w + static_cast<long long>(next) * cin * ldw,
                      ldw, cin, ldw);
      commit_copies();
    }
  }
  __syncthreads();  // every warp is done with the board: its bytes become the result

  // 3. The products as float [64][ldo] in shared memory (bias added below).
  const int ldo = ldw + kOutPad;
  float* result = reinterpret_cast<float*>(shared_raw);
#pragma unroll
  for (int t = 0; t < kMaxTiles; ++t)
    if (t < tiles) wmma::store_matrix_sync(result + warp * 8 * ldo + t * 32, acc[t], ldo, wmma::mem_row_major);
  __syncthreads();

  // 4. Squeeze-excitation: gates from the mean over squares, in float.
  if (se_hidden) {
    const int parts = threads > cout ? threads / cout : 1;
    for (int t = tid; t < parts * cout; t += threads) {
      const int c = t % cout, p = t / cout;
      float sum = 0.0f;
      for (int s = p; s < 64; s += parts) sum += result[s * ldo + c];
      partial[p * cout + c] = sum;
    }
    __syncthreads();
    for (int c = tid; c < cout; c += threads) {
      float sum = 0.0f;
      for (int p = 0; p < parts; ++p) sum += partial[p * cout + c];
      pooled[c] = sum * (1.0f / 64.0f) + bias[c];
    }
    __syncthreads();
    block_se_gates(pooled, se_w1, se.b1, se_w2, se.b2, cout, se_hidden, act, partial, hidden, gates);
  }

  // 5. y = act(scale * (result + bias) + shift + residual), 16 bytes per
  // step. The residual row is read before y's same row is written, by the
  // same thread.
  const int out_vecs = cout / 8;
  half* yp = y + pos * 64 * cout;
  const half* rp = residual ? residual + pos * 64 * cout : nullptr;
  for (int i = tid; i < 64 * out_vecs; i += threads) {
    const int s = i / out_vecs, c0 = (i - s * out_vecs) * 8;
    HalfVec8 res, out;
    if (rp) res.raw = reinterpret_cast<const uint4*>(rp + s * cout)[c0 / 8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float v = result[s * ldo + c0 + k] + bias[c0 + k];
      if (se_hidden) v = v * gates[c0 + k] + gates[cout + c0 + k];
      if (rp) v += __half2float(res.h[k]);
      out.h[k] = __float2half(activate(v, act));
    }
    reinterpret_cast<uint4*>(yp + s * cout)[c0 / 8] = out.raw;
  }
#endif
}

namespace conv_fused_detail {
size_t shared_limit() {
  static std::mutex mutex;
  static size_t limit[64] = {};  // by device ordinal; 0 = not asked yet
  int device = 0;
  GPU_CHECK(hipGetDevice(&device));
  if (device < 0 || device >= 64) return 48 * 1024;
  std::lock_guard<std::mutex> lock(mutex);
  if (limit[device] == 0) {
    hipDeviceProp_t prop;
    GPU_CHECK(hipGetDeviceProperties(&prop, device));
    size_t optin = prop.major >= 8 ? prop.sharedMemPerBlockOptin : 0;  // cp.async needs sm_80
    if (optin > 0)
      GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(&conv3x3_fused_kernel),
                                    hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(optin)));
    limit[device] = optin > 0 ? optin : 1;  // 1: no fused kernel on this device
  }
  return limit[device];
}
}  // namespace conv_fused_detail

bool conv3x3_fused_supported(DType dt, int cin, int cout, int ldw, int se_hidden) {
  using namespace conv_fused_detail;
  return dt == DType::F16 && cin > 0 && cin % 16 == 0 && cin <= kMaxChannels && cout > 0 &&
         cout % 8 == 0 && ldw % 32 == 0 && ldw >= cout && ldw <= kMaxChannels &&
         se_hidden >= 0 && se_hidden <= kMaxSeHidden && 2 * cout <= kMaxSeHidden &&
         plan(cin, cout, ldw, se_hidden, 1).bytes() <= shared_limit();
}

bool conv3x3_fused(hipStream_t stream, DType dt, int n, int cin, int cout, int ldw, const void* x,
                   const void* w, const float* bias, const void* residual, const SeWeights& se,
                   void* y, Activation act, int multiprocessors) {
  using namespace conv_fused_detail;
  const int se_hidden = se.w1 ? se.hidden : 0;
  if (!conv3x3_fused_supported(dt, cin, cout, ldw, se_hidden)) return false;
  if (!aligned(x, 16) || !aligned(y, 16) || !aligned(w, 16) || (residual && !aligned(residual, 16)) ||
      (se_hidden && (!aligned(se.w1, 16) || !aligned(se.w2, 16))))
    return false;
  if (n == 0) return true;
  // Few positions (a block per multiprocessor or fewer): every tap's weights
  // in flight at once, for latency. Many: 3 stages, so that several blocks
  // share a multiprocessor.
  const size_t limit = shared_limit();
  int stages = n <= multiprocessors ? kTaps : 3;
  while (stages > 1 && plan(cin, cout, ldw, se_hidden, stages).bytes() > limit) --stages;
  const size_t shared = plan(cin, cout, ldw, se_hidden, stages).bytes();
  gpu_launch(conv3x3_fused_kernel, n, kThreads, shared, stream, cin, cout, ldw, stages, static_cast<const half*>(x),
             static_cast<const half*>(w), bias, static_cast<const half*>(residual), se, static_cast<half*>(y), act);
  GPU_CHECK_LAUNCH();
  return true;
}

#else  // AMD: no wmma; the caller keeps im2col + GEMM.

bool conv3x3_fused_supported(DType, int, int, int, int) { return false; }

bool conv3x3_fused(hipStream_t, DType, int, int, int, int, const void*, const void*, const float*,
                   const void*, const SeWeights&, void*, Activation, int) {
  return false;
}

#endif

}  // namespace lc0rocm
