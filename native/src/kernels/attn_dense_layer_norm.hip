// attn_dense_layer_norm: an encoder layer's dense product and the post-LN
// after it in one launch, for few rows (batch 1):
//   y = LN(alpha * (x . W^T + b) + skip) * gammas + betas
// x [M][K], W [N][K], skip and y [M][N] half; b, gammas, betas float; float
// accumulation, one rounding to half at the end. Design and measurements:
// native/DENSE_LAYER_NORM.md.
//
// Why: at batch 1 each encoder layer runs its output product and its FFN's
// second product on cuBLAS (~3.9 us each on an H100, bound by latency, not
// by the weights' bytes) and a layer-norm launch after each (~2.3 us); this
// is one launch for each pair.
//
// Layout: a cluster of C blocks spans the N outputs of a group of 16 rows
// (block r: columns Nc r .. Nc r + Nc - 1, Nc = N / C); grid.y counts the
// row groups.
//  - Before waiting for the prior kernel a block asks for its Nc weight
//    rows (a bulk copy each, by the tensor memory accelerator, into shared
//    memory) and loads its columns' b, gammas and betas: weights are no
//    kernel's output.
//  - Its 8 warps split K in chunks of 32. Per chunk each lane loads 16
//    bytes of x's rows g and g + 8 (lane = 4g + t: columns 8t .. 8t + 7),
//    all chunks at once, and reads the same 16 bytes of each weight row
//    from shared memory: whole vectors as mma fragments
//    (mma_16x8x32_vectors, mma_tile.h).
//  - Partial sums meet in shared memory (fixed order: replays give the same
//    bits); 16 threads per row add bias, scale, add skip and take the mean
//    and centred sum of squares over the block's Nc columns. After a cluster
//    barrier each block combines the C pairs in rank order (equal counts:
//    mean of means, M2 = sum M2_i + Nc sum (mean_i - mean)^2, exact as two
//    passes) and writes its columns.
//
// NVIDIA sm_90 on (clusters, bulk copies, mma.sync); elsewhere the prepare
// step plans nothing and the caller keeps the BLAS product + layer norm.
#include "../attention_device.h"
#include "../gpu_compat.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <cstdint>

#include "async_copy.h"
#include "mma_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace dense_norm_detail {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kGroupRows = 16;                          // one mma row tile
constexpr int kChunk = 32;                              // k per chunk: two k-steps
constexpr int kMaxChunksPerWarp = 8;                    // K up to 8 * 8 * 32 = 2048
constexpr int kThreadsPerRow = kThreads / kGroupRows;  // the epilogue's
constexpr int kMaxCluster = 16;

__host__ __device__ constexpr size_t shared_bytes(int cols, int K) {
  const size_t weights = sizeof(__half) * static_cast<size_t>(cols) * vector_row_stride(K);
  const size_t partials = sizeof(float) * kWarps * kGroupRows * cols;  // reuse the weights' space
  return weights > partials ? weights : partials;
}

template <int kTiles>  // Nc / 8 column tiles of the block
__global__ void __launch_bounds__(kThreads)
    dense_layer_norm_kernel(__half* __restrict__ y, const __half* __restrict__ x, const __half* __restrict__ w,
                            const float* __restrict__ bias, const __half* __restrict__ skip,
                            const float* __restrict__ gammas, const float* __restrict__ betas, int M, int N, int K,
                            float alpha, float eps) {
  constexpr int kCols = 8 * kTiles;
  constexpr int kColsPerThread = (kCols + kThreadsPerRow - 1) / kThreadsPerRow;
  extern __shared__ uint4 shared_raw[];
  __half* ws = reinterpret_cast<__half*>(shared_raw);
  float* partials = reinterpret_cast<float*>(shared_raw);  // [warp][row][col], after the products
  __shared__ float2 stats[kGroupRows];                     // per row: mean, centred sum of squares
  __shared__ unsigned long long weights_ready;

  const int rank = static_cast<int>(gpu_cluster_rank());
  const int cluster = N / kCols;
  const int col0 = rank * kCols, row0 = blockIdx.y * kGroupRows;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4;
  const int stride = vector_row_stride(K);

  if (tid == 0) {
    mbarrier_init(&weights_ready, kCols);
    mbarrier_init_fence();
  }
  __syncthreads();
  if (tid < kCols)
    bulk_copy_to_shared(ws + tid * stride, w + static_cast<size_t>(col0 + tid) * K,
                        static_cast<unsigned>(sizeof(__half) * K), &weights_ready);
  const int erow = tid / kThreadsPerRow, ecol = tid % kThreadsPerRow;
  float pb[kColsPerThread], pg[kColsPerThread], pt[kColsPerThread];
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    const int c = col0 + ecol + j * kThreadsPerRow;
    const bool in = ecol + j * kThreadsPerRow < kCols;
    pb[j] = in ? bias[c] : 0.0f;
    pg[j] = in ? gammas[c] : 0.0f;
    pt[j] = in ? betas[c] : 0.0f;
  }

  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // x and skip are earlier kernels' outputs

  const int chunks = K / kChunk;
  const int ra = row0 + g, rb = row0 + g + 8;
  uint4 xa[kMaxChunksPerWarp], xb[kMaxChunksPerWarp];
#pragma unroll
  for (int i = 0; i < kMaxChunksPerWarp; ++i) {
    const int k = (warp + i * kWarps) * kChunk + 8 * t;
    xa[i] = xb[i] = make_uint4(0, 0, 0, 0);
    if (k < K) {
      if (ra < M) xa[i] = *reinterpret_cast<const uint4*>(x + static_cast<size_t>(ra) * K + k);
      if (rb < M) xb[i] = *reinterpret_cast<const uint4*>(x + static_cast<size_t>(rb) * K + k);
    }
  }
  const int srow = row0 + erow;
  float sk[kColsPerThread];
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    const int c = ecol + j * kThreadsPerRow;
    sk[j] = srow < M && c < kCols ? __half2float(skip[static_cast<size_t>(srow) * N + col0 + c]) : 0.0f;
  }

  bulk_copy_wait(&weights_ready, 0);
  float acc[kTiles][4] = {};
#pragma unroll
  for (int i = 0; i < kMaxChunksPerWarp; ++i) {
    const int chunk = warp + i * kWarps;
    if (chunk >= chunks) break;
#pragma unroll
    for (int n = 0; n < kTiles; ++n) {
      const uint4 wv = *reinterpret_cast<const uint4*>(ws + (8 * n + g) * stride + chunk * kChunk + 8 * t);
      mma_16x8x32_vectors(acc[n], xa[i], xb[i], wv);
    }
  }
  __syncthreads();  // every warp is done with the weights: partials take their place
#pragma unroll
  for (int n = 0; n < kTiles; ++n) {
    const int c = 8 * n + 2 * t;
    float* top = partials + (warp * kGroupRows + g) * kCols + c;
    float* bottom = top + 8 * kCols;
    top[0] = acc[n][0];
    top[1] = acc[n][1];
    bottom[0] = acc[n][2];
    bottom[1] = acc[n][3];
  }
  __syncthreads();

  // Epilogue: row erow, columns ecol + 16 j of the block's.
  float v[kColsPerThread];
  float sum = 0.0f;
  int count = 0;
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    const int c = ecol + j * kThreadsPerRow;
    v[j] = 0.0f;
    if (c < kCols) {
      float s = 0.0f;
#pragma unroll
      for (int r = 0; r < kWarps; ++r) s += partials[(r * kGroupRows + erow) * kCols + c];
      v[j] = (s + pb[j]) * alpha + sk[j];
      sum += v[j];
      ++count;
    }
  }
  // The 16 threads of a row are one half of a warp.
#pragma unroll
  for (int m = kThreadsPerRow / 2; m > 0; m /= 2) sum += gpu_shfl_xor(sum, m);
  const float local_mean = sum / kCols;
  float m2 = 0.0f;
#pragma unroll
  for (int j = 0; j < kColsPerThread; ++j) {
    if (j < count) {
      const float d = v[j] - local_mean;
      m2 += d * d;
    }
  }
#pragma unroll
  for (int m = kThreadsPerRow / 2; m > 0; m /= 2) m2 += gpu_shfl_xor(m2, m);
  if (ecol == 0) stats[erow] = make_float2(local_mean, m2);
  gpu_cluster_sync();  // every block's statistics written

  float2 all[kMaxCluster];
  float mean_sum = 0.0f;
#pragma unroll
  for (int r = 0; r < kMaxCluster; ++r) {
    if (r < cluster) {
      all[r] = gpu_cluster_map(stats, r)[erow];
      mean_sum += all[r].x;
    }
  }
  gpu_cluster_arrive();  // done reading the other blocks' shared memory
  const float mean = mean_sum / cluster;
  float total_m2 = 0.0f;
#pragma unroll
  for (int r = 0; r < kMaxCluster; ++r) {
    if (r < cluster) {
      const float d = all[r].x - mean;
      total_m2 += all[r].y + kCols * d * d;
    }
  }
  const float inv_std = rsqrtf(total_m2 / N + eps);
  if (srow < M) {
#pragma unroll
    for (int j = 0; j < kColsPerThread; ++j) {
      const int c = ecol + j * kThreadsPerRow;
      if (c < kCols)
        y[static_cast<size_t>(srow) * N + col0 + c] = __float2half_rn((v[j] - mean) * inv_std * pg[j] + pt[j]);
    }
  }
  gpu_cluster_wait();  // no block leaves while another may still read its statistics
}

using Kernel = void (*)(__half*, const __half*, const __half*, const float*, const __half*, const float*,
                        const float*, int, int, int, float, float);

// The kernel for Nc / 8 column tiles, or null where none is built.
Kernel kernel_for(int tiles) {
  switch (tiles) {
    case 1: return dense_layer_norm_kernel<1>;
    case 2: return dense_layer_norm_kernel<2>;
    case 4: return dense_layer_norm_kernel<4>;
    case 6: return dense_layer_norm_kernel<6>;
    case 8: return dense_layer_norm_kernel<8>;
    case 12: return dense_layer_norm_kernel<12>;
    case 16: return dense_layer_norm_kernel<16>;
    default: return nullptr;
  }
}

}  // namespace dense_norm_detail

DenseNormPlan dense_layer_norm_prepare(const DeviceInfo& device, int N, int K, int max_rows, int forced_cluster) {
  using namespace dense_norm_detail;
  DenseNormPlan plan;
  if (max_rows <= 0 || !device.clusters || !device.mma_fp16 || device.warp_size != 32) return plan;
  if (N <= 0 || K < kChunk || K % kChunk || K > kMaxChunksPerWarp * kWarps * kChunk) return plan;
  for (int cluster : {16, 8, 4, 2, 1}) {
    if (forced_cluster > 0 && cluster != forced_cluster) continue;
    if (N % (8 * cluster)) continue;
    const int tiles = N / cluster / 8;
    const Kernel kernel = kernel_for(tiles);
    const size_t bytes = shared_bytes(8 * tiles, K);
    const size_t fixed = sizeof(float2) * kGroupRows + sizeof(unsigned long long);
    if (kernel == nullptr || bytes + fixed > device.shared_per_block) continue;
    GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
    if (cluster > 8 && !gpu_allow_nonportable_clusters(kernel)) continue;
    if (gpu_max_active_clusters(kernel, dim3(kThreads), bytes, cluster) <= 0) continue;
    plan.max_rows = max_rows;
    plan.cluster = cluster;
    plan.shared_bytes = bytes;
    return plan;
  }
  return plan;
}

bool dense_layer_norm(const DenseNormPlan& plan, hipStream_t stream, int M, int N, int K, const __half* x,
                      const __half* w, const float* bias, const __half* skip, const float* gammas,
                      const float* betas, float alpha, float eps, __half* y) {
  using namespace dense_norm_detail;
  if (plan.cluster <= 0 || M < 1 || M > plan.max_rows || N % (8 * plan.cluster)) return false;
  if (!aligned16(x) || !aligned16(w)) return false;
  const Kernel kernel = kernel_for(N / plan.cluster / 8);
  if (kernel == nullptr) return false;
  const dim3 grid(plan.cluster, (M + kGroupRows - 1) / kGroupRows);
  gpu_launch_cluster(kernel, grid, dim3(kThreads), plan.shared_bytes, stream, static_cast<unsigned>(plan.cluster),
                     y, x, w, bias, skip, gammas, betas, M, N, K, alpha, eps);
  check_launch("dense_layer_norm");
  return true;
}

#else  // AMD: no clusters or mma.sync; the caller keeps the BLAS product and layer norm.

DenseNormPlan dense_layer_norm_prepare(const DeviceInfo&, int, int, int, int) { return {}; }

bool dense_layer_norm(const DenseNormPlan&, hipStream_t, int, int, int, const __half*, const __half*, const float*,
                      const __half*, const float*, const float*, float, float, __half*) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
