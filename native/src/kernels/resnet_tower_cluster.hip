// resnet_tower_cluster: resnet_tower.hip's whole residual tower in one
// launch, for small batches, with each position spread over a cluster of
// limits::kTowerClusterBlocks (4) blocks on as many multiprocessors:
//   mid  = act(conv1(flow) + b1)
//   v    = conv2(mid) + b2
//   flow = act(SE(v) + flow)            (SE optional: se_fused.hip's unit)
// NVIDIA sm_90 on (mma.sync m16n8k16, distributed shared memory), half
// storage, float accumulation, 64 channels. Design and measurements:
// native/docs/RESNET_TOWER.md.
//
// Why: with a position per block, one multiprocessor does all of a
// position's products (~4 us per convolution at batch 1: tensor-core and
// shared-memory time of one multiprocessor plus each step's latency). Four
// multiprocessors each take a quarter of every layer's output channels.
//
// Layout (a block = one quarter of one position):
//   x, y     [n][64][64] half: the tower's input and output (may alias:
//            every block of a cluster has read its position before any
//            writes it, a cluster barrier apart)
//   layers   ResidualBlockWeights per residual block; conv weights
//            [64][9 * 64] half (column tap * 64 + c): block r copies rows
//            16 r .. 16 r + 15 (its output channels) and their biases
// Shared memory of each block: the layer table; its quarter of the current
// and the next layer's weights [2][16][584] half with biases (cp.async, a
// step ahead); the next SE unit (whole); the position as two zero-bordered
// 10 x 10 boards [100][72] half (flow, mid: resnet_tower_layout.h), all 64
// channels; conv2's output v [64][68] float, all 64 channels; the SE's
// floats and the K split's partial sums. A convolution's epilogue writes
// the block's 16 channels into every block's mid (conv1) or v (conv2), then
// the cluster meets at a barrier: each block then holds the whole layer
// output, and after conv2 every block computes the SE unit and the residual
// update of all 64 channels itself (the same inputs, the same code: the
// same bits in every block), so flow never crosses between blocks.
// Eight warps: warp w takes squares 16 (w % 4) .. + 15 (ranks 2 (w % 4) and
// + 1) against the block's 16 channels (two 8-column tiles sharing each A
// fragment), over channels 32 (w / 4) .. + 31 of every tap (K split in two
// groups, the second's sums added to the first's through shared memory);
// even and odd taps accumulate apart (shorter dependent chains of products)
// and are added at the end.
//
// AMD (no clusters, no mma.sync): a stub that reports no support.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "../gpu_compat.h"
#include "ops.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include "async_copy.h"
#include "mma_tile.h"
#include "resnet_tower_layout.h"
#endif

namespace lc0rocm {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace tower_cluster_detail {
using namespace tower_detail;
constexpr int kCluster = limits::kTowerClusterBlocks;
constexpr int kCols = kC / kCluster;  // output channels per block
constexpr int kThreads = 256;         // 8 warps of 32 lanes (mma.sync's width)
static_assert(kCols == 16, "a warp's two 8-column tiles are the block's channels");
// A block's share of a layer: weights [kCols][kLdk] half, then bias [kCols] float.
constexpr int kWeightBytes = kCols * kLdk * 2 + kCols * 4;
constexpr int kLdv = kC + 4;  // v's square pitch, floats (the epilogue's 8 squares on distinct banks)
constexpr int kVBytes = 64 * kLdv * 4;
// The K split's partial sums: [4 warps][2 tiles x 4 values][32 lanes] floats.
constexpr int kPartialBytes = 4 * 8 * 32 * 4;
// The SE's floats: the quarters' channel sums [4][C], hidden [h], gates [2C].
__host__ __device__ constexpr size_t se_floats(int hidden) { return 4 * kC + hidden + 2 * kC; }

__host__ __device__ constexpr size_t shared_bytes(int blocks, int hidden) {
  return table_bytes(blocks) + 2 * static_cast<size_t>(kWeightBytes) + se_bytes(hidden) + 2 * kBoardBytes + kVBytes +
         sizeof(float) * se_floats(hidden) + kPartialBytes;
}
}  // namespace tower_cluster_detail

// Grid: n clusters of kCluster blocks, cluster i = position i.
template <Activation kAct>
__global__ void __launch_bounds__(tower_cluster_detail::kThreads, 1)
resnet_tower_cluster_kernel(int blocks, int hidden, const ResidualBlockWeights* __restrict__ layers, const half* x,
                            half* y, Activation act) {
#if defined(LC0ROCM_CLUSTERS_AVAILABLE)
  using namespace tower_cluster_detail;
  extern __shared__ __align__(16) unsigned char tower_shared[];
  ResidualBlockWeights* table = reinterpret_cast<ResidualBlockWeights*>(tower_shared);
  unsigned char* weight_buffers = tower_shared + table_bytes(blocks);  // [2][kWeightBytes]
  unsigned char* se_unit = weight_buffers + 2 * kWeightBytes;          // se_bytes(hidden)
  half* flow = reinterpret_cast<half*>(se_unit + se_bytes(hidden));
  half* mid = flow + kBoardBytes / 2;
  float* v = reinterpret_cast<float*>(mid + kBoardBytes / 2);  // [64][kLdv]
  float* se_scratch = v + 64 * kLdv;                           // se_floats(hidden)
  float* partials = se_scratch + se_floats(hidden);            // kPartialBytes
  auto layer_weights = [&](int step) { return reinterpret_cast<half*>(weight_buffers + (step % 2) * kWeightBytes); };
  auto layer_bias = [&](int step) {
    return reinterpret_cast<float*>(weight_buffers + (step % 2) * kWeightBytes + kCols * kLdk * 2);
  };

  const int tid = threadIdx.x;
  const unsigned rank = gpu_cluster_rank();  // this block's output channels: kCols * rank ..
  const int position = static_cast<int>(gpu_cluster_index());
  const int steps = 2 * blocks;  // a step is one convolution
  // Step s's weight rows and bias into buffer s % 2 and, for a block's
  // second convolution, its SE unit (whose last reader, the SE of the block
  // before, is done by then), as one copy group: empty past the last step,
  // so that every step waits on the same group count.
  auto fetch_step = [&](int step) {
    if (step < steps) {
      const ResidualBlockWeights& b = table[step / 2];
      const bool second = step % 2 == 1;
      const half* w = static_cast<const half*>(second ? b.conv2_w : b.conv1_w) + rank * kCols * kK;
      const float* bias = (second ? b.conv2_b : b.conv1_b) + rank * kCols;
      fetch_weight_rows(layer_weights(step), layer_bias(step), w, bias, kCols, tid, kThreads);
      if (second && b.se.w1) fetch_se_unit(se_unit, b.se, tid, kThreads);
    }
    commit_copies();
  };

  // The layer table, the first step's copies and the boards' zero borders
  // need nothing from the prior kernel: before the wait for it
  // (gpu_compat.h's dependent launch).
  gpu_release_next_grid();
  copy_layer_table(table, layers, blocks, tid, kThreads);
  zero_board_borders(flow, 2, tid, kThreads);
  __syncthreads();  // the table
  fetch_step(0);
  gpu_wait_for_prior_grid();
  {
    const half* xp = x + static_cast<long long>(position) * 64 * kC;
    for (int i = tid; i < 64 * kSquareVecs; i += kThreads) {
      const int sq = i / kSquareVecs, vec = i - sq * kSquareVecs;
      copy16_async(flow + padded(sq) * kLdb + vec * 8, xp + sq * kC + vec * 8);
    }
    commit_copies();
  }
  // Every block of the cluster has started (its shared memory exists)
  // before any block writes into another's.
  gpu_cluster_sync();

  // Where this block's epilogue writes: mid and v in each block of the cluster.
  half* mid_at[kCluster];
  float* v_at[kCluster];
#pragma unroll
  for (int r = 0; r < kCluster; ++r) {
    mid_at[r] = gpu_cluster_map(mid, r);
    v_at[r] = gpu_cluster_map(v, r);
  }

  // Lane (g, q): A rows g and g + 8 (file g of the warp's two ranks), B
  // column g of each 8-column tile, k pairs 2q and 2q + 8 of each 16 (PTX's
  // m16n8k16 layout); its outputs: those squares, channels 2q and 2q + 1 of
  // each tile.
  const int lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const int rt = warp % 4, k_group = warp / 4;
  const bool finishes = k_group == 0;  // the warps that hold the sums and write the outputs
  const int sq_lo = 2 * rt * 8 + g, sq_hi = sq_lo + 8;
  const int out_lo = padded(sq_lo), out_hi = padded(sq_hi);
  const int h = hidden;
  for (int step = 0; step < steps; ++step) {
    const int conv = step % 2;
    // This step's copies are in (and, at step 0, the position); every warp
    // is past the step before, so its buffer takes the next step's copies.
    wait_copies(0);
    __syncthreads();
    fetch_step(step + 1);

    float acc[2][2][4] = {};  // [tap parity][column tile][value]
    const half* in = conv ? mid : flow;
    const half* b_row = layer_weights(step) + g * kLdk + 2 * q;
#pragma unroll
    for (int tap = 0; tap < 9; ++tap) {
      const int ky = tap / 3, kx = tap % 3;
#pragma unroll
      for (int c0 = k_group * (kC / 2); c0 < (k_group + 1) * (kC / 2); c0 += 16) {
        const int a_lo = ((2 * rt + ky) * 10 + g + kx) * kLdb + 2 * q + c0;
        const int a_hi = a_lo + 10 * kLdb;  // the next rank
        const uint32_t a0 = load_half_pair(in + a_lo), a1 = load_half_pair(in + a_hi);
        const uint32_t a2 = load_half_pair(in + a_lo + 8), a3 = load_half_pair(in + a_hi + 8);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const half* bp = b_row + nt * 8 * kLdk + tap * kC + c0;
          mma_16x8x16(acc[tap % 2][nt], a0, a1, a2, a3, load_half_pair(bp), load_half_pair(bp + 8));
        }
      }
    }
    float sum[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) sum[nt][e] = acc[0][nt][e] + acc[1][nt][e];
    // The second group's partial sums to the first (lane-major: no bank
    // conflicts), added in a fixed order.
    float* mine = partials + rt * (8 * 32) + lane;
    if (!finishes) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) mine[(nt * 4 + e) * 32] = sum[nt][e];
    }
    __syncthreads();

    // The block's 16 channels of this layer's output into every block.
    const float* bias = layer_bias(step);
    if (finishes) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) sum[nt][e] += mine[(nt * 4 + e) * 32];
        const int local = nt * 8 + 2 * q, o = rank * kCols + local;
        const float b0 = bias[local], b1 = bias[local + 1];
        if (conv == 0) {
          // mid = act(conv1 + b1)
          const half2 lo = __floats2half2_rn(activate_as<kAct>(sum[nt][0] + b0, act),
                                             activate_as<kAct>(sum[nt][1] + b1, act));
          const half2 hi = __floats2half2_rn(activate_as<kAct>(sum[nt][2] + b0, act),
                                             activate_as<kAct>(sum[nt][3] + b1, act));
#pragma unroll
          for (int r = 0; r < kCluster; ++r) {
            *reinterpret_cast<half2*>(mid_at[r] + out_lo * kLdb + o) = lo;
            *reinterpret_cast<half2*>(mid_at[r] + out_hi * kLdb + o) = hi;
          }
        } else {
          // v = conv2 + b2, kept in float
          const float2 lo = make_float2(sum[nt][0] + b0, sum[nt][1] + b1);
          const float2 hi = make_float2(sum[nt][2] + b0, sum[nt][3] + b1);
#pragma unroll
          for (int r = 0; r < kCluster; ++r) {
            *reinterpret_cast<float2*>(v_at[r] + sq_lo * kLdv + o) = lo;
            *reinterpret_cast<float2*>(v_at[r] + sq_hi * kLdv + o) = hi;
          }
        }
      }
    }
    // Every block's share is in every block. No block writes another's mid
    // (v) again before the next conv1 (conv2) epilogue, which comes after
    // the next cluster barrier, by when every block has read this one.
    gpu_cluster_sync();
    if (conv == 0) continue;

    // flow = act(SE(v) + flow), all 64 channels, in every block alike.
    const SeWeights& se = table[step / 2].se;
    const bool has_se = se.w1 != nullptr;  // the same for the whole cluster
    float* gates = se_scratch + 4 * kC + h;  // [2C]: scales (sigmoid), then shifts
    if (has_se) {
      const half* w1 = reinterpret_cast<const half*>(se_unit);
      const half* w2 = w1 + kC * se.hidden;
      const float* b1 = reinterpret_cast<const float*>(w2 + se.hidden * 2 * kC);
      const float* b2 = b1 + se.hidden;
      const int hs = se.hidden;
      // Channel sums of each quarter of the squares, then the pooled means
      // (their sum in a fixed order) inside the hidden layer's products.
      {
        const int c = tid % kC, quarter = tid / kC;
        float s = 0.0f;
#pragma unroll 4
        for (int sq = quarter * 16; sq < quarter * 16 + 16; ++sq) s += v[sq * kLdv + c];
        se_scratch[quarter * kC + c] = s;
      }
      __syncthreads();
      float* hidden_out = se_scratch + 4 * kC;  // [h]
      for (int j = warp; j < hs; j += kThreads / 32) {
        float s = 0.0f;
#pragma unroll
        for (int half_index = 0; half_index < 2; ++half_index) {
          const int c = lane + 32 * half_index;
          const float pooled =
              (se_scratch[c] + se_scratch[kC + c] + se_scratch[2 * kC + c] + se_scratch[3 * kC + c]) * (1.0f / 64.0f);
          s += pooled * __half2float(w1[c * hs + j]);
        }
#pragma unroll
        for (int m = 16; m >= 1; m /= 2) s += gpu_shfl_xor(s, m);
        if (lane == 0) hidden_out[j] = activate(s + b1[j], act);
      }
      __syncthreads();
      if (tid < 2 * kC) {
        float s = b2[tid];
        for (int j = 0; j < hs; ++j) s += hidden_out[j] * __half2float(w2[j * 2 * kC + tid]);
        gates[tid] = tid < kC ? 1.0f / (1.0f + expf(-s)) : s;
      }
      __syncthreads();
    }
    // Two channels per thread and turn; the next step's barrier orders
    // these writes before conv1 reads flow.
    for (int i = tid; i < 64 * kC / 2; i += kThreads) {
      const int sq = i / (kC / 2), c = 2 * (i - sq * (kC / 2));
      const float2 val = *reinterpret_cast<const float2*>(v + sq * kLdv + c);
      half2* at = reinterpret_cast<half2*>(flow + padded(sq) * kLdb + c);
      const half2 residual = *at;
      const float scale0 = has_se ? gates[c] : 1.0f, scale1 = has_se ? gates[c + 1] : 1.0f;
      const float shift0 = has_se ? gates[kC + c] : 0.0f, shift1 = has_se ? gates[kC + c + 1] : 0.0f;
      const float v0 = val.x * scale0 + shift0 + __low2float(residual);
      const float v1 = val.y * scale1 + shift1 + __high2float(residual);
      *at = __floats2half2_rn(activate_as<kAct>(v0, act), activate_as<kAct>(v1, act));
    }
  }
  // The tower's output: each block writes a quarter of the squares.
  __syncthreads();
  {
    constexpr int kSquares = 64 / kCluster;
    half* yp = y + static_cast<long long>(position) * 64 * kC;
    for (int i = tid; i < kSquares * kSquareVecs; i += kThreads) {
      const int sq = rank * kSquares + i / kSquareVecs, vec = i % kSquareVecs;
      *reinterpret_cast<uint4*>(yp + sq * kC + vec * 8) =
          *reinterpret_cast<const uint4*>(flow + padded(sq) * kLdb + vec * 8);
    }
  }
  wait_copies(0);  // the last (empty) group: nothing is left in flight at exit
#endif
}

namespace tower_cluster_detail {
// Every instantiation with_activation may launch gets the shared memory it
// needs above the 48 KB default (at network creation, not inside a capture);
// returns the clusters the device runs at once (the fewest of them).
int allow_shared(size_t bytes) {
  int fewest = 1 << 30;
  auto allow = [&](auto kernel) {
    GPU_CHECK(hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
    const int active = gpu_max_active_clusters(kernel, dim3(kThreads), bytes, kCluster);
    fewest = active < fewest ? active : fewest;
  };
  allow(&resnet_tower_cluster_kernel<Activation::Relu>);
  allow(&resnet_tower_cluster_kernel<Activation::None>);
  allow(&resnet_tower_cluster_kernel<Activation::Mish>);
  allow(&resnet_tower_cluster_kernel<Activation::Relu2>);
  allow(&resnet_tower_cluster_kernel<Activation::Swish>);
  allow(&resnet_tower_cluster_kernel<kAnyActivation>);
  return fewest;
}
}  // namespace tower_cluster_detail

int resnet_tower_cluster_prepare(const DeviceInfo& device, const ResnetTower& tower) {
  using namespace tower_cluster_detail;
  const size_t bytes = shared_bytes(tower.blocks, tower.se_hidden);
  if (!device.clusters || !device.mma_fp16 || device.warp_size != 32 || device.shared_per_block < bytes) return 0;
  // A position per cluster while every block can have a multiprocessor of
  // its own (more would queue behind one another: the per-block tower
  // takes those batches).
  const int positions = device.multiprocessors / kCluster;
  if (positions == 0) return 0;
  const int active = allow_shared(bytes);
  return active < positions ? active : positions;
}

void resnet_tower_cluster(hipStream_t stream, const ResnetTower& tower, int n, const void* x, void* y,
                          Activation act) {
  using namespace tower_cluster_detail;
  if (n < 1 || n > tower.cluster_positions)
    fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower_cluster: batch outside what it was prepared for");
  const size_t bytes = shared_bytes(tower.blocks, tower.se_hidden);
  const half* xh = static_cast<const half*>(x);
  half* yh = static_cast<half*>(y);
  with_activation(act, [&](auto tag) {
    gpu_launch_cluster(resnet_tower_cluster_kernel<decltype(tag)::value>, dim3(n * kCluster), dim3(kThreads), bytes,
                       stream, kCluster, tower.blocks, tower.se_hidden, tower.layers, xh, yh, act);
  });
  GPU_CHECK_LAUNCH();
}

#else  // AMD: no clusters; the caller keeps the other paths.

int resnet_tower_cluster_prepare(const DeviceInfo&, const ResnetTower&) { return 0; }

void resnet_tower_cluster(hipStream_t, const ResnetTower&, int, const void*, void*, Activation) {
  fail(LC0ROCM_INTERNAL_ERROR, "resnet_tower_cluster: no clustered tower in this build");
}

#endif

}  // namespace lc0rocm
