// Post-LN of the encoder layers, fused with the bias of the GEMM before it,
// an activation, alpha scaling and the residual add:
//   out = LN(act(in + bias) * alpha + skip) * gammas + betas.
// The row is cached in shared memory as float (each thread reads back only
// what it wrote), mean and two-pass variance reduce over the threads of the
// row: one warp per row (shuffles only) for rows of up to kWarpRowMax values,
// a whole block per row for wider ones (smolgen's, few rows of thousands).
// Rows whose width and pointers allow it move 16 bytes per load and store
// and stay in registers instead: wide rows of large launches (smolgen's
// second layer norm from wide_from_rows rows) a row to a 256-thread block
// (layer_norm_wide_kernel); other wide rows and launches of up to
// kBlockPerRowMaxRows rows one block per row with up to kBlockRegIters
// vectors per thread (layer_norm_block_regs_kernel); else one warp per row
// of up to kRegIters vectors per lane (layer_norm_regs_kernel).
// The kernels and the launcher, as templates: attn_layer_norm.hip
// instantiates them for float, attn_layer_norm_half.hip for half, so the
// build compiles the two halves of this file's many kernels (storage type
// x kernel x vectors a lane x activation) side by side.
#pragma once
#include "../attention_device.h"
#include "aligned.h"

namespace lc0rocm {
namespace attn {

constexpr int kWarpRowMax = 2048;
constexpr int kBlockRowThreads = 256;
constexpr int kMaxCols = 11264;  // row cache + partial sums within 48 KB of shared memory

template <typename T, bool kWholeBlock, bool kVector>
__global__ void layer_norm_kernel(T* out, const T* in, const float* bias, const T* skip,
                                  const float* gammas, const float* betas, int rows, int cols,
                                  float alpha, float eps, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  extern __shared__ float shared[];
  constexpr int V = kVector ? kVecWidth<T> : 1;  // values per load
  const int lanes = warpSize;
  const int warp = threadIdx.x / lanes;
  const int row = kWholeBlock ? blockIdx.x : blockIdx.x * (blockDim.x / lanes) + warp;
  if (row >= rows) return;  // whole warps leave together (never in whole-block mode)
  const int first = (kWholeBlock ? threadIdx.x : threadIdx.x % lanes) * V;
  const int step = (kWholeBlock ? blockDim.x : lanes) * V;
  float* cache = kWholeBlock ? shared : shared + warp * cols;
  float* partials = shared + cols;  // whole-block mode only
  const long long base = static_cast<long long>(row) * cols;

  float sum = 0.0f;
  for (int c = first; c < cols; c += step) {
    float v[V], r[V];
    if (kVector) {
      load_vec(in + base + c, v);
      if (skip != nullptr) load_vec(skip + base + c, r);
    } else {
      v[0] = load_f(in, base + c);
      if (skip != nullptr) r[0] = load_f(skip, base + c);
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      float x = v[k];
      if (bias != nullptr) x += bias[c + k];
      x = activate(x, act) * alpha;
      if (skip != nullptr) x += r[k];
      cache[c + k] = x;
      sum += x;
    }
  }
  const float mean = (kWholeBlock ? block_sum(sum, partials) : warp_sum(sum)) / cols;
  float squares = 0.0f;
  for (int c = first; c < cols; c += step) {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = cache[c + k] - mean;
      squares += d * d;
    }
  }
  const float var = (kWholeBlock ? block_sum(squares, partials) : warp_sum(squares)) / cols;
  const float inv_std = rsqrtf(var + eps);
  for (int c = first; c < cols; c += step) {
    float y[V];
#pragma unroll
    for (int k = 0; k < V; ++k) y[k] = (cache[c + k] - mean) * inv_std * gammas[c + k] + betas[c + k];
    if (kVector) store_vec(out + base + c, y);
    else store_f(out, base + c, y[0]);
  }
}

// Rows of up to kRegIters 16-byte vectors per lane, one warp per row, the
// row kept in registers (no shared memory, so more rows in flight): every
// lane issues all its loads first, then the two reductions, then the stores.
// Same arithmetic as layer_norm_kernel; cols % kVecWidth<T> == 0, bias,
// gammas and betas 16-byte aligned (read 4 floats at a time).
constexpr int kRegIters = 8;

constexpr int kRegRowsPerBlock = 4;
// Loading the parameters up front as well (one round trip in all instead of
// three) costs registers: ~112 instead of 68 per thread at 3 vectors per lane
// (4 blocks per multiprocessor instead of 7). Measured on an H100 (t82,
// fp16): +6 % at batch 1, +2 % at batch 64, even at 128, -4 % at 256; so
// only for launches of at most kPreloadMaxRows rows (batch 64 of 64 squares),
// and only rows of up to kPreloadIters vectors per lane.
constexpr int kPreloadIters = 4;
constexpr int kPreloadMaxRows = 4096;

// kAct: the activation fixed at compile time, or kAnyActivation for act.
template <typename T, int kIters, bool kPreloadWanted, Activation kAct>
__global__ void layer_norm_regs_kernel(T* out, const T* in, const float* bias, const T* skip,
                                       const float* gammas, const float* betas, int rows,
                                       int cols, float alpha, float eps, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int V = kVecWidth<T>;
  constexpr bool kPreload = kPreloadWanted && kIters <= kPreloadIters;
  constexpr int P = kPreload ? kIters : 1;
  const int lanes = warpSize;
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int row = blockIdx.x * (blockDim.x / lanes) + warp;
  if (row >= rows) return;  // whole warps leave together
  const long long base = static_cast<long long>(row) * cols;

  uint4 raw_in[kIters], raw_skip[kIters];
  float pb[P][V], pg[P][V], pt[P][V];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (lane + it * lanes) * V;
    if (c < cols) {
      raw_in[it] = *reinterpret_cast<const uint4*>(in + base + c);
      if (skip != nullptr) raw_skip[it] = *reinterpret_cast<const uint4*>(skip + base + c);
      if constexpr (kPreload) {
        load_params<V>(bias, c, pb[it]);
        load_params<V>(gammas, c, pg[it]);
        load_params<V>(betas, c, pt[it]);
      }
    }
  }
  float x[kIters][V];
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (lane + it * lanes) * V;
    if (c < cols) {
      const T* e = reinterpret_cast<const T*>(&raw_in[it]);
      const T* r = reinterpret_cast<const T*>(&raw_skip[it]);
      float b_own[V];
      if constexpr (!kPreload) load_params<V>(bias, c, b_own);
      const float* b = kPreload ? pb[kPreload ? it : 0] : b_own;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float v = to_float<T>(e[k]);
        if (bias != nullptr) v += b[k];
        v = activate_as<kAct>(v, act) * alpha;
        if (skip != nullptr) v += to_float<T>(r[k]);
        x[it][k] = v;
        sum += v;
      }
    }
  }
  const float mean = warp_sum(sum) / cols;
  float squares = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if ((lane + it * lanes) * V < cols) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = x[it][k] - mean;
        squares += d * d;
      }
    }
  }
  const float var = warp_sum(squares) / cols;
  const float inv_std = rsqrtf(var + eps);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (lane + it * lanes) * V;
    if (c < cols) {
      float y[V], gm_own[V], bt_own[V];
      if constexpr (!kPreload) {
        load_params<V>(gammas, c, gm_own);
        load_params<V>(betas, c, bt_own);
      }
      const float* gm = kPreload ? pg[kPreload ? it : 0] : gm_own;
      const float* bt = kPreload ? pt[kPreload ? it : 0] : bt_own;
#pragma unroll
      for (int k = 0; k < V; ++k) y[k] = (x[it][k] - mean) * inv_std * gm[k] + bt[k];
      store_vec(out + base + c, y);
    }
  }
}

// The mean and 1 / std of a row spread over a block, each thread holding its
// vectors of it in x (sum: their sum); the block-wide kernels below share it.
template <int kIters, int V>
__device__ __forceinline__ void row_statistics(const float (&x)[kIters][V], float sum, int cols, float eps,
                                               float* partials, float& mean, float& inv_std) {
  mean = block_sum(sum, partials) / cols;
  float squares = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if ((threadIdx.x + it * blockDim.x) * V < cols) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = x[it][k] - mean;
        squares += d * d;
      }
    }
  }
  inv_std = rsqrtf(block_sum(squares, partials) / cols + eps);
}

// A wide row (smolgen's: heads x 256 values, one row per position) over a
// whole block, every thread holding kIters 16-byte vectors in registers.
// The shared-memory kernel walked such a row in dependent steps (load,
// cache, reduce, reread) and took ~10 us per call at any batch; here every
// load (inputs and parameters) is issued at once, then two block sums, then
// the stores. Same arithmetic as layer_norm_kernel; the conditions of
// layer_norm_regs_kernel.
constexpr int kBlockRegIters = 4;
// The kernel is compiled for blocks of up to this many threads (launch
// bounds): 1,024 threads may use 64 registers each (65,536 a block on
// NVIDIA). Unbounded, its variants for rows over 8,192 values (more than one
// vector a thread) asked more (half: 76-88) and failed to launch, float and
// half (H100).
constexpr int kBlockRegMaxThreads = 1024;
// Launches of up to kBlockPerRowMaxRows rows (batches up to 128) take this
// kernel too: a row over a block of one vector per thread has a shorter
// serial chain per thread than a row per warp of 3 vectors per lane, and
// needs few registers, so more rows are in flight (the row-per-warp kernel
// is latency-bound: ncu, native/docs/LAYER_NORM_FUSED.md). H100, t82 / bt4 fp16
// backendbench against a row per warp: b1 +9 / +16 %, b16 +5 / +12 %, b64
// +4-5 / +10 %, b128 +3-4 %; b256 even, b512 -1 %, hence the limit.
constexpr int kBlockPerRowMaxRows = 8192;

template <typename T, int kIters, Activation kAct>
__global__ void __launch_bounds__(kBlockRegMaxThreads)
    layer_norm_block_regs_kernel(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                                 const float* betas, int cols, float alpha, float eps, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int V = kVecWidth<T>;
  __shared__ float partials[kBlockRegMaxThreads / 32];   // one per warp; warps are >= 32 wide
  const int row = blockIdx.x;
  const long long base = static_cast<long long>(row) * cols;
  uint4 raw_in[kIters], raw_skip[kIters];
  float b[kIters][V], gm[kIters][V], bt[kIters][V];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (threadIdx.x + it * blockDim.x) * V;
    if (c < cols) {
      raw_in[it] = *reinterpret_cast<const uint4*>(in + base + c);
      if (skip != nullptr) raw_skip[it] = *reinterpret_cast<const uint4*>(skip + base + c);
      load_params<V>(bias, c, b[it]);
      load_params<V>(gammas, c, gm[it]);
      load_params<V>(betas, c, bt[it]);
    }
  }
  float x[kIters][V];
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if ((threadIdx.x + it * blockDim.x) * V < cols) {
      const T* e = reinterpret_cast<const T*>(&raw_in[it]);
      const T* r = reinterpret_cast<const T*>(&raw_skip[it]);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float v = to_float<T>(e[k]);
        if (bias != nullptr) v += b[it][k];
        v = activate_as<kAct>(v, act) * alpha;
        if (skip != nullptr) v += to_float<T>(r[k]);
        x[it][k] = v;
        sum += v;
      }
    }
  }
  float mean, inv_std;
  row_statistics<kIters, V>(x, sum, cols, eps, partials, mean, inv_std);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (threadIdx.x + it * blockDim.x) * V;
    if (c < cols) {
      float y[V];
#pragma unroll
      for (int k = 0; k < V; ++k) y[k] = (x[it][k] - mean) * inv_std * gm[it][k] + bt[it][k];
      store_vec(out + base + c, y);
    }
  }
}

// Smolgen's second layer norm (a row of heads x 256 values a position) from
// kWideNormDefaultRows rows on: a row over a block of kWideRowThreads
// threads, each holding up to kWideMaxIters 16-byte vectors. The bias is
// read as each vector is formed, gammas and betas only after the
// statistics, so a thread holds the row's values and little else (69
// registers at 4 vectors) and three or four rows fit on a multiprocessor,
// where the block-per-row kernel's 1,024-thread blocks fit one. H100, fp16,
// these layer norms' time a pass (native/docs/LAYER_NORM_FUSED.md): bt4 b512
// 314 -> 271 us, t82 b512 231 -> 142. Two rows a block sharing the
// parameters' loads took longer at b256 (bt4 153 -> 222 us), so a block
// takes one.
constexpr int kWideRowThreads = 256;
constexpr int kWideMaxIters = 8;

template <typename T, int kIters, Activation kAct>
__global__ void __launch_bounds__(kWideRowThreads)
    layer_norm_wide_kernel(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                           const float* betas, int cols, float alpha, float eps, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int V = kVecWidth<T>;
  __shared__ float partials[kWideRowThreads / 32];  // one per warp; warps are >= 32 wide
  const long long base = static_cast<long long>(blockIdx.x) * cols;
  uint4 raw_in[kIters];
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (threadIdx.x + it * blockDim.x) * V;
    if (c < cols) raw_in[it] = *reinterpret_cast<const uint4*>(in + base + c);
  }
  float x[kIters][V];
  float sum = 0.0f;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (threadIdx.x + it * blockDim.x) * V;
    if (c < cols) {
      float b[V], r[V];
      load_params<V>(bias, c, b);
      if (skip != nullptr) load_vec(skip + base + c, r);
      const T* e = reinterpret_cast<const T*>(&raw_in[it]);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float v = to_float<T>(e[k]);
        if (bias != nullptr) v += b[k];
        v = activate_as<kAct>(v, act) * alpha;
        if (skip != nullptr) v += r[k];
        x[it][k] = v;
        sum += v;
      }
    }
  }
  float mean, inv_std;
  row_statistics<kIters, V>(x, sum, cols, eps, partials, mean, inv_std);
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    const int c = (threadIdx.x + it * blockDim.x) * V;
    if (c < cols) {
      float y[V], gm[V], bt[V];
      load_params<V>(gammas, c, gm);
      load_params<V>(betas, c, bt);
#pragma unroll
      for (int k = 0; k < V; ++k) y[k] = (x[it][k] - mean) * inv_std * gm[k] + bt[k];
      store_vec(out + base + c, y);
    }
  }
}

template <typename T, int kIters, Activation kAct>
void launch_layer_norm_wide(int iters, hipStream_t stream, T* out, const T* in, const float* bias, const T* skip,
                            const float* gammas, const float* betas, int rows, int cols, float alpha, float eps,
                            Activation act) {
  if constexpr (kIters > 1) {
    if (iters < kIters) {
      launch_layer_norm_wide<T, kIters - 1, kAct>(iters, stream, out, in, bias, skip, gammas, betas, rows, cols,
                                                  alpha, eps, act);
      return;
    }
  }
  gpu_launch(layer_norm_wide_kernel<T, kIters, kAct>, rows, kWideRowThreads, 0, stream, out, in, bias, skip,
             gammas, betas, cols, alpha, eps, act);
}

template <typename T, int kIters, Activation kAct>
void launch_layer_norm_block_regs(int iters, int threads, hipStream_t stream, T* out, const T* in,
                                  const float* bias, const T* skip, const float* gammas,
                                  const float* betas, int rows, int cols, float alpha, float eps,
                                  Activation act) {
  if constexpr (kIters > 1) {
    if (iters < kIters) {
      launch_layer_norm_block_regs<T, kIters - 1, kAct>(iters, threads, stream, out, in, bias, skip, gammas,
                                                  betas, rows, cols, alpha, eps, act);
      return;
    }
  }
  gpu_launch(layer_norm_block_regs_kernel<T, kIters, kAct>, rows, threads, 0, stream, out, in, bias, skip, gammas,
             betas, cols, alpha, eps, act);
}

template <typename T, int kIters, Activation kAct>
void launch_layer_norm_regs(int iters, int grid, int block, hipStream_t stream, T* out, const T* in,
                            const float* bias, const T* skip, const float* gammas,
                            const float* betas, int rows, int cols, float alpha, float eps,
                            Activation act) {
  if constexpr (kIters > 1) {
    if (iters < kIters) {
      launch_layer_norm_regs<T, kIters - 1, kAct>(iters, grid, block, stream, out, in, bias, skip, gammas,
                                            betas, rows, cols, alpha, eps, act);
      return;
    }
  }
  if (rows <= kPreloadMaxRows)
    gpu_launch(layer_norm_regs_kernel<T, kIters, true, kAct>, grid, block, 0, stream, out, in, bias, skip, gammas,
               betas, rows, cols, alpha, eps, act);
  else
    gpu_launch(layer_norm_regs_kernel<T, kIters, false, kAct>, grid, block, 0, stream, out, in, bias, skip, gammas,
               betas, rows, cols, alpha, eps, act);
}

template <typename T, bool kWholeBlock>
void launch_layer_norm(bool vector, int grid, int block, size_t shared, hipStream_t stream, T* out,
                       const T* in, const float* bias, const T* skip, const float* gammas,
                       const float* betas, int rows, int cols, float alpha, float eps,
                       Activation act) {
  if (vector)
    gpu_launch(layer_norm_kernel<T, kWholeBlock, true>, grid, block, shared, stream, out, in, bias, skip, gammas,
               betas, rows, cols, alpha, eps, act);
  else
    gpu_launch(layer_norm_kernel<T, kWholeBlock, false>, grid, block, shared, stream, out, in, bias, skip, gammas,
               betas, rows, cols, alpha, eps, act);
}

template <typename T>
void layer_norm(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                const float* betas, int rows, int cols, float alpha, float eps, Activation act,
                int warp_size, hipStream_t stream, int wide_from_rows) {
  if (rows == 0) return;
  check_warp_size(warp_size);
  if (cols < 1 || cols > kMaxCols)
    fail(LC0ROCM_UNSUPPORTED, "layer norm over " + std::to_string(cols) + " values (at most " +
                                  std::to_string(kMaxCols) + ")");
  const bool vector = cols % kVecWidth<T> == 0 && aligned16(out) && aligned16(in) &&
                      (skip == nullptr || aligned16(skip));
  const int row_vectors = div_up(cols, static_cast<long long>(warp_size) * kVecWidth<T>);
  const bool params16 = (bias == nullptr || aligned16(bias)) && aligned16(gammas) && aligned16(betas);
  const int vectors = cols / kVecWidth<T>;
  const int block_threads = static_cast<int>(std::min<long long>(kBlockRegMaxThreads,
                                                                 div_up(vectors, warp_size) * warp_size));
  const int block_iters = static_cast<int>(div_up(vectors, block_threads));
  // The register kernels (every hot call) with the activation fixed at
  // compile time for the encoder layers' norms (none), smolgen's (Swish) and
  // the PE_DENSE embedding's (its product's activation: Mish in bt4, whose
  // layer norm took 71 us at b256 with the run-time switch, 33 with Mish
  // fixed); fewer variants than with_activation: this file has many already.
  const auto block_regs = [&] {
    with_activation_among<Activation::None, Activation::Swish, Activation::Mish>(act, [&](auto tag) {
      launch_layer_norm_block_regs<T, kBlockRegIters, decltype(tag)::value>(
          block_iters, block_threads, stream, out, in, bias, skip, gammas, betas, rows, cols, alpha, eps, act);
    });
  };
  const int wide_iters = static_cast<int>(div_up(vectors, kWideRowThreads));
  if (vector && params16 && wide_from_rows > 0 && rows >= wide_from_rows && vectors > kWideRowThreads &&
      wide_iters <= kWideMaxIters) {
    with_activation_among<Activation::None, Activation::Swish, Activation::Mish>(act, [&](auto tag) {
      launch_layer_norm_wide<T, kWideMaxIters, decltype(tag)::value>(wide_iters, stream, out, in, bias, skip,
                                                                     gammas, betas, rows, cols, alpha, eps, act);
    });
  } else if (vector && params16 && rows <= kBlockPerRowMaxRows && block_iters <= kBlockRegIters) {
    block_regs();
  } else if (vector && params16 && row_vectors <= kRegIters) {
    with_activation_among<Activation::None, Activation::Swish, Activation::Mish>(act, [&](auto tag) {
      launch_layer_norm_regs<T, kRegIters, decltype(tag)::value>(
          row_vectors, div_up(rows, kRegRowsPerBlock), kRegRowsPerBlock * warp_size, stream, out, in, bias, skip,
          gammas, betas, rows, cols, alpha, eps, act);
    });
  } else if (vector && params16 && block_iters <= kBlockRegIters) {
    block_regs();
  } else if (cols > kWarpRowMax) {
    const size_t shared = (cols + kBlockRowThreads / warp_size) * sizeof(float);
    launch_layer_norm<T, true>(vector, rows, kBlockRowThreads, shared, stream, out, in, bias, skip,
                               gammas, betas, rows, cols, alpha, eps, act);
  } else {
    // Up to 8 rows (warps) per block, within 32 KB of row cache.
    const int warps = std::max(1, std::min(8, static_cast<int>((32 << 10) / (cols * sizeof(float)))));
    const size_t shared = static_cast<size_t>(warps) * cols * sizeof(float);
    launch_layer_norm<T, false>(vector, div_up(rows, warps), warps * warp_size, shared, stream, out,
                                in, bias, skip, gammas, betas, rows, cols, alpha, eps, act);
  }
  check_launch("layer_norm");
}

}  // namespace attn
}  // namespace lc0rocm
