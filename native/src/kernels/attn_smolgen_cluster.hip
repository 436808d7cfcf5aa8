// attn_smolgen_cluster: smolgen's per-position chain up to the shared
// generator in one launch, for small batches (attention_kernels.h,
// SmolgenChain):
//   c   = x [64][E] . compress^T            flattened square-major [64 * hc]
//   h   = LN1(act(c . W1^T + b1))            [hidden]
//   out = LN2(act(h . W2^T + b2))            [heads * gen], half
// NVIDIA sm_90 on: each position over a cluster of 16 blocks (8 where the
// device will not run clusters of 16), on as many multiprocessors, meeting
// through distributed shared memory. Design and measurements:
// native/SMOLGEN_CLUSTER.md.
//
// Why: at batch 1 these are five launches on the critical path of every
// encoder layer (three products of one row per position and two layer
// norms, ~4 us each on an H100), where the weights (~4 MB) stream in well
// under that. **Off by default: measured slower** (31 against ~21 us per
// layer, t82 b1, H100); LC0ROCM_SMOLGEN_CLUSTER=N turns it on for batches
// up to N. SMOLGEN_CLUSTER.md has the measurements and what to try next.
//
// Layout (block r of a cluster: rank r of its position's blocks, S = 64 / cluster):
//   start     shared memory asks for the parameters (cp.async) and the
//             block's dense2 rows in chunks of 64 (a bulk copy each, a ring
//             of as many chunks as fit, async_copy.h); L2 for the block's
//             share of compress and dense1 (the cluster reads all of them)
//   compress  block r computes squares S r .. S r + S - 1, every channel
//             (warp w: channels w, w + 8, ..., lanes along E): its slice
//             [S * hc] of the flattened c, which is rows S hc r .. of
//             dense1's K: dense1 is split over K by block
//   dense1    block r: partial sums of all hidden outputs over its K slice
//             (a thread per output), in its shared memory; after a cluster
//             barrier every block adds the cluster's partials in rank order
//             (the same bits everywhere) and runs LN1 itself
//   dense2    block r: outputs R r .. R r + R - 1 (R = out / cluster) from
//             the ring, a warp per row, lanes along K; LN2's statistics:
//             each block's mean and centred sum of squares, combined after
//             a cluster barrier (Chan's formula, rank order), so the
//             variance is two-pass exact
// Float throughout; the only rounding is the output's to half (the BLAS
// path rounds after every product and layer norm: within fp16 tolerance).
//
// AMD (no clusters): a stub that reports no support.
#include <cstdint>

#include "../attention_device.h"
#include "../env_switch.h"
#include "../gpu_compat.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include "async_copy.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace smolgen_cluster_detail {
constexpr int kThreads = 256;  // 8 warps of 32 lanes
constexpr int kWarps = kThreads / 32;
constexpr int kChannelsPerWarp = 4;
constexpr int kMaxChannels = kChannelsPerWarp * kWarps;  // compress outputs per square
constexpr int kMaxEmbeddingVecs = 4;    // compress: 16-byte vectors of a row per lane (embedding <= 1024)
constexpr int kSquareGroup = 4;         // compress: squares whose loads a warp issues together
constexpr int kDense1Vecs = 16;         // dense1: 16-byte vectors of a row a thread loads together
constexpr int kMaxHidden = 256;         // dense1 outputs, LN1 width (every smolgen net we know: 256)
constexpr int kMaxShare = 1024;         // dense2 outputs per block
constexpr int kChunkRows = 64;          // dense2: weight rows per bulk copy
constexpr int kMaxStages = 16;          // ring slots

// Dot product of 8 halves with 8 halves, in float.
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b) {
  const __half2* ha = reinterpret_cast<const __half2*>(&a);
  const __half2* hb = reinterpret_cast<const __half2*>(&b);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 fa = __half22float2(ha[i]), fb = __half22float2(hb[i]);
    sum += fa.x * fb.x + fa.y * fb.y;
  }
  return sum;
}

// Dot product of 8 halves with 8 floats.
__device__ __forceinline__ float dot8(const uint4& a, const float* f) {
  const __half2* ha = reinterpret_cast<const __half2*>(&a);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 fa = __half22float2(ha[i]);
    sum += fa.x * f[2 * i] + fa.y * f[2 * i + 1];
  }
  return sum;
}

__device__ __forceinline__ uint4 load16(const __half* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

// Asks L2 for `bytes` at p (16-byte aligned, a multiple of 16), not waiting.
__device__ __forceinline__ void prefetch_l2(const void* p, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else
  (void)p;
  (void)bytes;
#endif
}

// Shared memory of a block, in floats from the start: the dense2 weight
// ring first (half rows), then the parameters and the working vectors.
struct Layout {
  int stages;  // chunks of dense2's rows in flight at once
  int b1, g1, be1, b2, g2, be2, flat, partial, hidden, share, stats, gathered, scratch, floats;

  __host__ __device__ Layout(const SmolgenChain& c, int cluster, int stage_count) {
    const int R = c.out / cluster, H = c.hidden;
    stages = stage_count;
    int at = stages * kChunkRows * H / 2;  // floats after the ring's halves (H is a multiple of 8)
    auto take = [&](int count) {
      const int here = at;
      at += (count + 3) / 4 * 4;  // 16-byte aligned pieces
      return here;
    };
    b1 = take(H);
    g1 = take(H);
    be1 = take(H);
    b2 = take(R);
    g2 = take(R);
    be2 = take(R);
    flat = take(64 / cluster * c.hidden_channels);
    partial = take(H);
    hidden = take(H);
    share = take(R);
    stats = take(2);
    gathered = take(2 * cluster);
    scratch = take(kWarps);
    floats = at;
  }
  __host__ __device__ size_t bytes() const { return sizeof(float) * static_cast<size_t>(floats); }
};

// Copies `count` floats (a multiple of 4, both ends 16-byte aligned) to shared memory, not waiting.
__device__ __forceinline__ void copy_floats_async(float* to, const float* from, int count) {
  for (int i = threadIdx.x; i < count / 4; i += kThreads) copy16_async(to + 4 * i, from + 4 * i);
}
}  // namespace smolgen_cluster_detail

template <int kCluster, Activation kAct>
__global__ void __launch_bounds__(smolgen_cluster_detail::kThreads)
    smolgen_cluster_kernel(SmolgenChain c, int stages, const __half* __restrict__ x, __half* __restrict__ out,
                           Activation act) {
  using namespace smolgen_cluster_detail;
  constexpr int kSquaresPerBlock = 64 / kCluster;
  extern __shared__ __align__(16) float shared[];
  const Layout L(c, kCluster, stages);
  __half* ring = reinterpret_cast<__half*>(shared);
  float* flat = shared + L.flat;
  float* partial = shared + L.partial;  // dense1 over this block's K slice (read by all)
  float* hidden = shared + L.hidden;    // LN1(act(dense1)), whole
  float* share = shared + L.share;      // act(dense2), this block's outputs
  float* stats = shared + L.stats;      // this block's mean, centred sum of squares (read by all)
  float* scratch = shared + L.scratch;
  float* gathered = shared + L.gathered;  // every block's stats, rank order

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int rank = static_cast<int>(gpu_cluster_rank());
  const int position = static_cast<int>(gpu_cluster_index());
  const int E = c.embedding, hc = c.hidden_channels, H = c.hidden;
  const int slice = kSquaresPerBlock * hc;  // dense1's K per block
  const int K1 = 64 * hc;
  const int R = c.out / kCluster;
  const int row_vecs = H / 8;  // 16-byte vectors of a dense2 row
  const int chunks = (R + kChunkRows - 1) / kChunkRows;
  const __half* w2 = c.w2 + static_cast<long long>(rank) * R * H;

  // Nothing below until the wait depends on an earlier kernel. L2 gets
  // this block's share of compress and dense1 (the cluster reads all of
  // them); shared memory gets the parameters (one copy group) and the first
  // `stages` chunks of this block's dense2 rows (a group each), all in
  // flight while compress and dense1 run.
  if (tid == 0) {
    const int w1_rows = H / kCluster, wc_halves = hc * E / kCluster;
    if (w1_rows > 0) prefetch_l2(c.w1 + static_cast<long long>(rank) * w1_rows * K1, static_cast<unsigned>(w1_rows * K1 * 2));
    if (wc_halves % 8 == 0) prefetch_l2(c.compress + rank * wc_halves, static_cast<unsigned>(wc_halves * 2));
  }
  gpu_release_next_grid();
  copy_floats_async(shared + L.b1, c.b1, H);
  copy_floats_async(shared + L.g1, c.gammas1, H);
  copy_floats_async(shared + L.be1, c.betas1, H);
  copy_floats_async(shared + L.b2, c.b2 + rank * R, R);
  copy_floats_async(shared + L.g2, c.gammas2 + rank * R, R);
  copy_floats_async(shared + L.be2, c.betas2 + rank * R, R);
  commit_copies();
  // dense2's rows: a bulk copy per chunk (one thread), a barrier per ring slot.
  __shared__ unsigned long long slot_ready[kMaxStages];
  if (tid == 0)
    for (int i = 0; i < stages; ++i) bulk_copy_barrier_init(&slot_ready[i]);
  __syncthreads();
  auto issue_chunk = [&](int k) {
    if (tid != 0) return;
    const int rows = min(kChunkRows, R - k * kChunkRows);
    bulk_copy_to_shared(ring + (k % stages) * kChunkRows * H, w2 + static_cast<long long>(k) * kChunkRows * H,
                        static_cast<unsigned>(rows * H * 2), &slot_ready[k % stages]);
  };
  int issued = 0;
  for (; issued < stages && issued < chunks; ++issued) issue_chunk(issued);

  // compress: warp w takes channels w, w + 8, ... (its weight rows in
  // registers first), lanes along E, squares a group of 4 at a time.
  {
    uint4 wc[kChannelsPerWarp][kMaxEmbeddingVecs];
#pragma unroll
    for (int j = 0; j < kChannelsPerWarp; ++j)
#pragma unroll
      for (int i = 0; i < kMaxEmbeddingVecs; ++i) {
        const int ch = warp + kWarps * j, v = lane + 32 * i;
        wc[j][i] = ch < hc && v < E / 8 ? load16(c.compress + static_cast<long long>(ch) * E + v * 8) : uint4{};
      }
    gpu_wait_for_prior_grid();
    const __half* xs = x + (static_cast<long long>(position) * 64 + rank * kSquaresPerBlock) * E;
#pragma unroll 1
    for (int s0 = 0; s0 < kSquaresPerBlock; s0 += kSquareGroup) {
      uint4 xv[kSquareGroup][kMaxEmbeddingVecs];
#pragma unroll
      for (int s = 0; s < kSquareGroup; ++s)
#pragma unroll
        for (int i = 0; i < kMaxEmbeddingVecs; ++i) {
          const int v = lane + 32 * i;
          xv[s][i] = v < E / 8 ? load16(xs + (s0 + s) * E + v * 8) : uint4{};
        }
#pragma unroll
      for (int j = 0; j < kChannelsPerWarp; ++j) {
        const int ch = warp + kWarps * j;
#pragma unroll
        for (int s = 0; s < kSquareGroup; ++s) {
          float sum = 0.0f;
#pragma unroll
          for (int i = 0; i < kMaxEmbeddingVecs; ++i) sum += dot8(xv[s][i], wc[j][i]);
          sum = warp_sum(sum);
          if (lane == 0 && ch < hc) flat[(s0 + s) * hc + ch] = sum;
        }
      }
    }
  }
  __syncthreads();

  // dense1 over this block's K slice: a thread per output.
  {
    const int vecs = slice / 8;
    const __half* w1 = c.w1 + static_cast<long long>(rank) * slice;
    for (int o = tid; o < H; o += kThreads) {
      const __half* row = w1 + static_cast<long long>(o) * K1;
      float sum = 0.0f;
#pragma unroll 1
      for (int v0 = 0; v0 < vecs; v0 += kDense1Vecs) {
        uint4 raw[kDense1Vecs];
#pragma unroll
        for (int i = 0; i < kDense1Vecs; ++i) raw[i] = v0 + i < vecs ? load16(row + (v0 + i) * 8) : uint4{};
#pragma unroll
        for (int i = 0; i < kDense1Vecs; ++i)
          if (v0 + i < vecs) sum += dot8(raw[i], flat + (v0 + i) * 8);
      }
      partial[o] = sum;
    }
  }
  gpu_cluster_sync();  // every block's partial sums written
  wait_copies(0);  // the parameters are in
  __syncthreads();

  // LN1 (every block alike): the cluster's partials added in rank order.
  {
    float local = 0.0f;
    for (int o = tid; o < H; o += kThreads) {
      float sum = 0.0f;
#pragma unroll
      for (int r = 0; r < kCluster; ++r) sum += gpu_cluster_map(partial, r)[o];
      const float v = activate_as<kAct>(sum + shared[L.b1 + o], act);
      hidden[o] = v;
      local += v;
    }
    const float mean = block_sum(local, scratch) / H;
    float squares = 0.0f;
    for (int o = tid; o < H; o += kThreads) {
      const float d = hidden[o] - mean;
      squares += d * d;
    }
    const float inv_std = rsqrtf(block_sum(squares, scratch) / H + c.eps);
    for (int o = tid; o < H; o += kThreads)
      hidden[o] = (hidden[o] - mean) * inv_std * shared[L.g1 + o] + shared[L.be1 + o];
  }
  __syncthreads();

  // dense2, this block's R outputs, a chunk of rows at a time from the
  // ring: a warp per row, lanes along K (16 bytes each, no bank conflicts).
  {
    float hv[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) hv[k] = lane < row_vecs ? hidden[lane * 8 + k] : 0.0f;
    for (int k = 0; k < chunks; ++k) {
      bulk_copy_wait(&slot_ready[k % stages], (k / stages) & 1);  // chunk k is in
      const int rows = min(kChunkRows, R - k * kChunkRows);
      const __half* slot = ring + (k % stages) * kChunkRows * H;
      for (int r = warp; r < rows; r += kWarps) {
        float sum = lane < row_vecs ? dot8(*reinterpret_cast<const uint4*>(slot + r * H + lane * 8), hv) : 0.0f;
        sum = warp_sum(sum);
        const int i = k * kChunkRows + r;
        if (lane == 0) share[i] = activate_as<kAct>(sum + shared[L.b2 + i], act);
      }
      if (k + stages < chunks) {
        __syncthreads();  // every warp is done with the slot
        issue_chunk(issued++);
      }
    }
  }
  __syncthreads();

  // LN2's statistics of this block's share, then of the whole row.
  {
    float local = 0.0f;
    for (int i = tid; i < R; i += kThreads) local += share[i];
    const float mean = block_sum(local, scratch) / R;
    float squares = 0.0f;
    for (int i = tid; i < R; i += kThreads) {
      const float d = share[i] - mean;
      squares += d * d;
    }
    squares = block_sum(squares, scratch);
    if (tid == 0) {
      stats[0] = mean;
      stats[1] = squares;
    }
  }
  gpu_cluster_sync();  // every block's statistics written
  if (tid < 2 * kCluster) gathered[tid] = gpu_cluster_map(stats, tid / 2)[tid % 2];
  gpu_cluster_arrive();  // done reading the other blocks' shared memory
  __syncthreads();
  float mean = 0.0f, m2 = 0.0f;
  for (int r = 0; r < kCluster; ++r) mean += gathered[2 * r];
  mean /= kCluster;
  for (int r = 0; r < kCluster; ++r) {
    const float d = gathered[2 * r] - mean;
    m2 += gathered[2 * r + 1] + R * d * d;
  }
  const float inv_std = rsqrtf(m2 / c.out + c.eps);
  __half* dst = out + static_cast<long long>(position) * c.out + rank * R;
  auto normalized = [&](int i) { return (share[i] - mean) * inv_std * shared[L.g2 + i] + shared[L.be2 + i]; };
  if (R % 8) {  // shares of a few values (small test nets): one at a time
    for (int i = tid; i < R; i += kThreads) dst[i] = __float2half_rn(normalized(i));
  }
  for (int i = tid * 8; R % 8 == 0 && i < R; i += kThreads * 8) {
    uint4 packed;
    __half2* h = reinterpret_cast<__half2*>(&packed);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(normalized(i + 2 * k), normalized(i + 2 * k + 1));
    *reinterpret_cast<uint4*>(dst + i) = packed;
  }
  gpu_cluster_wait();  // no block leaves while another may still read it
}

namespace smolgen_cluster_detail {
using Kernel = void (*)(SmolgenChain, int, const __half*, __half*, Activation);

template <int kCluster>
Kernel kernel_among(Activation act) {
  Kernel k = nullptr;
  with_activation_among<Activation::Swish>(act, [&](auto tag) {
    k = smolgen_cluster_kernel<kCluster, decltype(tag)::value>;
  });
  return k;
}

// The kernel for a cluster size and activation.
Kernel kernel_for(int cluster, Activation act) {
  return cluster == 16 ? kernel_among<16>(act) : kernel_among<8>(act);
}

bool shape_fits(const SmolgenChain& c, int cluster) {
  const int squares = 64 / cluster, R = c.out / cluster;
  return c.embedding > 0 && c.embedding % 8 == 0 && c.embedding <= 8 * 32 * kMaxEmbeddingVecs &&
         c.hidden_channels > 0 && c.hidden_channels <= kMaxChannels && (squares * c.hidden_channels) % 8 == 0 &&
         squares % kSquareGroup == 0 && c.hidden > 0 && c.hidden <= kMaxHidden && c.hidden % 8 == 0 &&
         c.out % cluster == 0 && R > 0 && R <= kMaxShare && R % 4 == 0;
}
}  // namespace smolgen_cluster_detail

SmolgenClusterPlan smolgen_cluster_prepare(const DeviceInfo& device, const SmolgenChain& chain, Activation act) {
  using namespace smolgen_cluster_detail;
  SmolgenClusterPlan plan;
  if (!device.clusters || device.warp_size != 32) return plan;
  // Off by default: slower than the five launches it replaces (31 against
  // ~21 us per layer at t82 b1 on an H100, native/SMOLGEN_CLUSTER.md).
  // LC0ROCM_SMOLGEN_CLUSTER=N turns it on for batches up to N (as many as
  // the device runs clusters at once); LC0ROCM_SMOLGEN_CLUSTER_BLOCKS=8 or
  // 16 fixes the cluster size.
  const int cap = env_int("LC0ROCM_SMOLGEN_CLUSTER", 0);
  if (cap <= 0) return plan;
  const int forced = env_int("LC0ROCM_SMOLGEN_CLUSTER_BLOCKS", 0);
  for (int cluster : {16, 8}) {
    if ((forced == 8 || forced == 16) && cluster != forced) continue;
    if (!shape_fits(chain, cluster)) continue;
    // As many chunks of dense2's rows in flight as shared memory holds.
    const int R = chain.out / cluster, chunks = (R + kChunkRows - 1) / kChunkRows;
    int stages = chunks < kMaxStages ? chunks : kMaxStages;
    const size_t barriers = sizeof(unsigned long long) * kMaxStages;  // static, beside the dynamic bytes
    while (stages > 1 && Layout(chain, cluster, stages).bytes() + barriers > device.shared_per_block) --stages;
    const size_t bytes = Layout(chain, cluster, stages).bytes();
    if (bytes + barriers > device.shared_per_block) continue;
    const Kernel kernel = kernel_for(cluster, act);
    GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
    if (cluster > 8 && !gpu_allow_nonportable_clusters(kernel)) continue;
    const int active = gpu_max_active_clusters(kernel, dim3(kThreads), bytes, cluster);
    if (active <= 0) continue;
    // A position per cluster while every block has a multiprocessor of its own.
    int positions = device.multiprocessors / cluster;
    if (active < positions) positions = active;
    if (cap < positions) positions = cap;
    if (positions > 0) plan = SmolgenClusterPlan{positions, cluster, stages, bytes};
    return plan;
  }
  return plan;
}

void smolgen_cluster(const SmolgenClusterPlan& plan, const SmolgenChain& chain, int n, const __half* x, __half* out,
                     Activation act, hipStream_t stream) {
  using namespace smolgen_cluster_detail;
  if (n < 1 || n > plan.positions)
    fail(LC0ROCM_INTERNAL_ERROR, "smolgen_cluster: batch outside what it was prepared for");
  gpu_launch_cluster(kernel_for(plan.cluster, act), dim3(n * plan.cluster), dim3(kThreads), plan.shared_bytes,
                     stream, static_cast<unsigned>(plan.cluster), chain, plan.stages, x, out, act);
  check_launch("smolgen_cluster");
}

#else  // AMD: no clusters; the caller keeps the BLAS path.

SmolgenClusterPlan smolgen_cluster_prepare(const DeviceInfo&, const SmolgenChain&, Activation) { return {}; }

void smolgen_cluster(const SmolgenClusterPlan&, const SmolgenChain&, int, const __half*, __half*, Activation,
                     hipStream_t) {
  fail(LC0ROCM_INTERNAL_ERROR, "smolgen_cluster: no clustered smolgen in this build");
}

#endif

}  // namespace attn
}  // namespace lc0rocm
