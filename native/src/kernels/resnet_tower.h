// resnet_tower: a convolution net's whole residual tower in one launch.
// Each block takes one position at a time through every residual block,
//   mid  = act(conv1(flow) + b1)
//   v    = conv2(mid) + b2
//   flow = act(SE(v) + flow)            (SE optional: se_fused.hip's unit)
// and, where asked, one more convolution of the tower's output into an
// output of its own, head = act(conv(flow) + b): the convolution policy's
// first layer (64 -> 64), a step like a block's first.
// with flow and mid kept in shared memory between layers: nothing between
// the tower's input and its output touches device memory but the weights.
// NVIDIA sm_80+ (mma.sync m16n8k16), half storage, float accumulation,
// 64 channels. Design and measurements: native/docs/RESNET_TOWER.md.
//
// Why: below a few hundred positions a 64-channel tower is ~20 launches
// (two convolutions and an SE tail per block) of 2-5 us each, all latency
// for a few MFLOP per position (maia-1900's pass at batch 1: ~100 us).
//
// Layout:
//   x, y     [n][64][64] half: the tower's input and output (may alias:
//            a block reads its position before it writes it)
//   blocks   ResidualBlockWeights per residual block, in device memory;
//            conv weights [64][9 * 64] half (conv3x3_implicit's layout:
//            column tap * 64 + c, tap = 3 ky + kx)
// Shared memory: the layer table; the current and the next layer's weights
// [2][64][584] half with their biases, and the next SE unit (cp.async, a
// step ahead: the next layer's copy runs under this one's products);
// the position as two zero-bordered 10 x 10 boards [100][72] half (flow and
// mid: under tap (ky, kx) square (r, f) reads padded square (r + ky) * 10 +
// f + kx, so the im2col is in the addressing, as in conv3x3_implicit.hip),
// and the SE unit's floats. The 8-half paddings put the 8 rows a fragment
// load touches on distinct banks. One block per multiprocessor (~200 KB
// with maia's shapes, 215 KB for a pair). Eight warps. One position at a
// time: two groups of four split K (channels 0-31 / 32-63 of every tap),
// each warp a 32-square x 32-channel tile (2 x 4 m16n8k16 tiles: A
// fragments shared over 4 column tiles, B over 2 row tiles), the second
// group's sums added to the first's through shared memory. A pair: warp w
// computes squares 16 (w % 4) .. + 15 against channels 32 (w / 4) .. + 31
// of both positions (each B fragment serves both).
//
// AMD: mma.sync is NVIDIA's; this file then defines a stub that reports no
// support, and the caller keeps the per-layer path.
//
// The kernel and its launches as templates: resnet_tower.hip instantiates a
// position per block (K split or not) and runs the tower, resnet_tower_pair.hip
// the pair of positions, so the build compiles the two side by side.
#pragma once
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

namespace tower_detail {
constexpr int kThreads = 256;  // 8 warps of 32 lanes (mma.sync's width)
// A layer's weights [kC][kLdk] half, then its bias [kC] float.
constexpr int kWeightBytes = kC * kLdk * 2 + kC * 4;

// Per position: the row tiles' channel sums [4][C], pooled [C], gates [2C],
// hidden [h] floats.
__host__ __device__ constexpr size_t se_floats(int hidden) { return 4 * kC + kC + 2 * kC + hidden; }

// Split K (two warp groups, each half of every tap's channels): the second
// group's partial sums [4 warps][tiles x 4 values x 4 n-tiles][32 lanes].
__host__ __device__ constexpr size_t reduce_bytes(int k_groups, int tiles) {
  return k_groups == 2 ? sizeof(float) * 4 * tiles * 16 * 32 : 0;
}
// Shared memory of a block taking `positions` at a time: the layer table,
// two weight buffers, one SE unit, two boards (flow, mid) per position, the
// SE floats per position and the split's partial sums.
__host__ __device__ constexpr size_t shared_bytes(int positions, int hidden, int blocks, int m_tiles = 1,
                                                  int k_groups = 1) {
  return table_bytes(blocks) + 2 * static_cast<size_t>(kWeightBytes) + se_bytes(hidden) +
         2 * static_cast<size_t>(positions) * kBoardBytes + sizeof(float) * positions * se_floats(hidden) +
         reduce_bytes(k_groups, positions * m_tiles);
}
}  // namespace tower_detail

// kP positions at a time per block (1 or 2): a pair shares every weight
// fragment load. kMT: 16-row tiles per warp (1 or 2), kKGroups: warp groups
// splitting K (1 or 2); with kMT = kKGroups = 2 each warp's 32 x 32 tile
// shares its A fragments over 4 column tiles and its B fragments over 2
// row tiles (8 fragment loads per 4 products instead of 12), and the second
// group's partial sums meet the first's through shared memory. hidden: the
// widest SE unit's (the shared layout's).
template <int kP, int kMT, int kKGroups, Activation kAct>
__global__ void __launch_bounds__(tower_detail::kThreads, 1)
resnet_tower_kernel(int n, int blocks, int hidden, const ResidualBlockWeights* __restrict__ layers, const half* x,
                    half* y, const half* head_w, const float* head_b, half* head_y, Activation act) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  using namespace tower_detail;
  extern __shared__ __align__(16) unsigned char tower_shared[];
  ResidualBlockWeights* table = reinterpret_cast<ResidualBlockWeights*>(tower_shared);
  unsigned char* weight_buffers = tower_shared + table_bytes(blocks);  // [2][kWeightBytes]
  unsigned char* se_unit = weight_buffers + 2 * kWeightBytes;          // se_bytes(hidden)
  half* boards = reinterpret_cast<half*>(se_unit + se_bytes(hidden));   // flow [kP], then mid [kP]
  float* se_scratch = reinterpret_cast<float*>(boards + 2 * kP * (kBoardBytes / 2));  // [kP][se_floats]
  float* partials = se_scratch + kP * se_floats(hidden);  // reduce_bytes(kKGroups, kP * kMT)
  auto flow = [&](int p) { return boards + p * (kBoardBytes / 2); };
  auto mid = [&](int p) { return boards + (kP + p) * (kBoardBytes / 2); };
  auto layer_weights = [&](int step) { return reinterpret_cast<half*>(weight_buffers + (step % 2) * kWeightBytes); };
  auto layer_bias = [&](int step) {
    return reinterpret_cast<float*>(weight_buffers + (step % 2) * kWeightBytes + kC * kLdk * 2);
  };

  const int tid = threadIdx.x;
  // A step is one convolution; this block's steps run over its groups of
  // kP positions (group blockIdx.x, + gridDim.x, ...) and, within each,
  // over every layer.
  const int groups = (n + kP - 1) / kP;
  const bool head = head_y != nullptr;   // the same for the whole grid
  const int steps_per_group = 2 * blocks + (head ? 1 : 0);
  const int my_groups = static_cast<int>(blockIdx.x) < groups ? (groups - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int steps = my_groups * steps_per_group;
  // Step s's weights and bias into buffer s % 2 and, for a block's second
  // convolution, its SE unit (whose last reader, the step before's
  // epilogue, is done by then), as one copy group: empty past the last
  // step, so that every step waits on the same group count.
  auto fetch_step = [&](int step) {
    if (step < steps) {
      const int layer = step % steps_per_group;
      if (layer == 2 * blocks) {  // the head
        fetch_weight_rows(layer_weights(step), layer_bias(step), head_w, head_b, kC, tid, kThreads);
      } else {
        const ResidualBlockWeights& b = table[layer / 2];
        const bool second = layer % 2 == 1;
        fetch_weight_rows(layer_weights(step), layer_bias(step),
                          static_cast<const half*>(second ? b.conv2_w : b.conv1_w), second ? b.conv2_b : b.conv1_b,
                          kC, tid, kThreads);
        if (second && b.se.w1) fetch_se_unit(se_unit, b.se, tid, kThreads);
      }
    }
    commit_copies();
  };

  // The layer table, the first step's copies and the boards' zero borders
  // need nothing from the prior kernel: before the wait for it
  // (gpu_compat.h's dependent launch).
  gpu_release_next_grid();
  copy_layer_table(table, layers, blocks, tid, kThreads);
  zero_board_borders(boards, 2 * kP, tid, kThreads);
  __syncthreads();  // the table
  fetch_step(0);
  gpu_wait_for_prior_grid();

  // Lane (g, q): A rows g and g + 8 (file g of each of the warp's ranks),
  // B column g of each tile, k pairs 2q and 2q + 8 of each 16 (PTX's
  // m16n8k16 layout); its outputs: those squares, channels 2q and 2q + 1 of
  // each tile, in each of the group's positions.
  static_assert(kMT == kKGroups && (kMT == 1 || kMT == 2), "8 warps = 4 / kMT row groups x 2 column halves x kKGroups");
  constexpr int kRowGroups = 4 / kMT;
  constexpr int kSlots = kP * kMT;               // the warp's 16-row tiles: position p, tile mt at p * kMT + mt
  constexpr int kKSpan = kC / kKGroups;          // channels of each tap this warp's group takes
  const int lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, q = lane % 4;
  const int k_group = warp / (2 * kRowGroups), tile_warp = warp % (2 * kRowGroups);
  const int row_group = tile_warp % kRowGroups, col_half = tile_warp / kRowGroups;
  const bool finishes = k_group == 0;  // the warps that hold the sums and write the outputs
  // Row tile of the warp's tile mt: ranks 2 rt and 2 rt + 1.
  auto row_tile = [&](int mt) { return row_group * kMT + mt; };
  const int floats_per_position = static_cast<int>(se_floats(hidden));
  int step = 0;
  for (int group = blockIdx.x; group < groups; group += gridDim.x) {
    const int first = group * kP;
    const int count = n - first < kP ? n - first : kP;  // positions in this group (the last may be short)
    for (int p = 0; p < count; ++p) {
      const half* xp = x + static_cast<long long>(first + p) * 64 * kC;
      for (int i = tid; i < 64 * kSquareVecs; i += kThreads) {
        const int sq = i / kSquareVecs, v = i - sq * kSquareVecs;
        copy16_async(flow(p) + padded(sq) * kLdb + v * 8, xp + sq * kC + v * 8);
      }
    }
    commit_copies();
    for (int layer = 0; layer < steps_per_group; ++layer, ++step) {
      // conv 0: a block's first convolution, or the head (flow -> mid).
      const int blk = layer / 2, conv = layer == 2 * blocks ? 0 : layer % 2;
      // This step's copies (and the boards) are in; every warp is past
      // the step before, so its buffer takes the next step's copies.
      wait_copies(0);
      __syncthreads();
      fetch_step(step + 1);

      float acc[kSlots][4][4] = {};
      const half* b_row = layer_weights(step) + (col_half * 32 + g) * kLdk + 2 * q;
#pragma unroll
      for (int tap = 0; tap < 9; ++tap) {
        const int ky = tap / 3, kx = tap % 3;
#pragma unroll
        for (int c0 = k_group * kKSpan; c0 < (k_group + 1) * kKSpan; c0 += 16) {
          uint32_t b[4][2];
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const half* bp = b_row + nt * 8 * kLdk + tap * kC + c0;
            b[nt][0] = load_half_pair(bp);
            b[nt][1] = load_half_pair(bp + 8);
          }
#pragma unroll
          for (int slot = 0; slot < kSlots; ++slot) {
            const int p = slot / kMT, rt = row_tile(slot % kMT);
            if (p >= count) break;  // the same for the whole block
            const half* in = conv ? mid(p) : flow(p);
            const int a_lo = ((2 * rt + ky) * 10 + g + kx) * kLdb + 2 * q + c0;
            const int a_hi = a_lo + 10 * kLdb;  // the next rank
            const uint32_t a0 = load_half_pair(in + a_lo), a1 = load_half_pair(in + a_hi);
            const uint32_t a2 = load_half_pair(in + a_lo + 8), a3 = load_half_pair(in + a_hi + 8);
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) mma_16x8x16(acc[slot][nt], a0, a1, a2, a3, b[nt][0], b[nt][1]);
          }
        }
      }
      if (kKGroups == 2) {
        // The second group's partial sums to the first (lane-major: no
        // bank conflicts), added in a fixed order.
        float* mine = partials + tile_warp * (kSlots * 16 * 32) + lane;
        if (!finishes) {
#pragma unroll
          for (int slot = 0; slot < kSlots; ++slot)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) mine[((slot * 4 + nt) * 4 + e) * 32] = acc[slot][nt][e];
        }
        __syncthreads();
        if (finishes) {
#pragma unroll
          for (int slot = 0; slot < kSlots; ++slot)
#pragma unroll
            for (int nt = 0; nt < 4; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) acc[slot][nt][e] += mine[((slot * 4 + nt) * 4 + e) * 32];
        }
      }

      const float* bias = layer_bias(step);
      if (conv == 0) {
        // mid = act(conv1 + b1); conv2 reads it after the next step's barrier.
        if (finishes) {
#pragma unroll
          for (int slot = 0; slot < kSlots; ++slot) {
            const int p = slot / kMT, rt = row_tile(slot % kMT);
            if (p >= count) break;
            const int out_lo = padded(2 * rt * 8 + g), out_hi = padded((2 * rt + 1) * 8 + g);
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
              const int o = col_half * 32 + nt * 8 + 2 * q;
              const float b0 = bias[o], b1 = bias[o + 1];
              *reinterpret_cast<half2*>(mid(p) + out_lo * kLdb + o) = __floats2half2_rn(
                  activate_as<kAct>(acc[slot][nt][0] + b0, act), activate_as<kAct>(acc[slot][nt][1] + b1, act));
              *reinterpret_cast<half2*>(mid(p) + out_hi * kLdb + o) = __floats2half2_rn(
                  activate_as<kAct>(acc[slot][nt][2] + b0, act), activate_as<kAct>(acc[slot][nt][3] + b1, act));
            }
          }
        }
        continue;
      }

      // v = conv2 + b2, kept in float.
#pragma unroll
      for (int slot = 0; slot < kSlots; ++slot) {
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int o = col_half * 32 + nt * 8 + 2 * q;
          acc[slot][nt][0] += bias[o];
          acc[slot][nt][1] += bias[o + 1];
          acc[slot][nt][2] += bias[o];
          acc[slot][nt][3] += bias[o + 1];
        }
      }
      const SeWeights& se = table[blk].se;
      const bool has_se = se.w1 != nullptr;  // the same for the whole block
      if (has_se) {
        // Channel means: each warp sums its 16-square tiles (the 8 lanes
        // of a column differ in g: lane bits 2-4), then the four row
        // tiles' sums are added in a fixed order.
        if (finishes) {
#pragma unroll
          for (int slot = 0; slot < kSlots; ++slot) {
            const int p = slot / kMT, rt = row_tile(slot % kMT);
            float* row_sums = se_scratch + p * floats_per_position;
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
              float s0 = acc[slot][nt][0] + acc[slot][nt][2], s1 = acc[slot][nt][1] + acc[slot][nt][3];
#pragma unroll
              for (int m = 4; m < 32; m *= 2) {
                s0 += gpu_shfl_xor(s0, m);
                s1 += gpu_shfl_xor(s1, m);
              }
              if (g == 0) {
                const int o = col_half * 32 + nt * 8 + 2 * q;
                row_sums[rt * kC + o] = s0;
                row_sums[rt * kC + o + 1] = s1;
              }
            }
          }
        }
        __syncthreads();
        // The SE unit from shared memory: pooled, hidden, gates, a
        // barrier after each (SE_FUSED.md's arithmetic, float throughout).
        const int h = se.hidden;
        const half* w1 = reinterpret_cast<const half*>(se_unit);
        const half* w2 = w1 + kC * h;
        const float* b1 = reinterpret_cast<const float*>(w2 + h * 2 * kC);
        const float* b2 = b1 + h;
        for (int i = tid; i < count * kC; i += kThreads) {
          const int p = i / kC, c = i - p * kC;
          float* f = se_scratch + p * floats_per_position;
          f[4 * kC + c] = (f[c] + f[kC + c] + f[2 * kC + c] + f[3 * kC + c]) * (1.0f / 64.0f);
        }
        __syncthreads();
        for (int i = tid; i < count * h; i += kThreads) {
          const int p = i / h, j = i - p * h;
          float* f = se_scratch + p * floats_per_position;
          float sum = b1[j];
#pragma unroll 8
          for (int c = 0; c < kC; ++c) sum += f[4 * kC + c] * __half2float(w1[c * h + j]);
          f[7 * kC + j] = activate(sum, act);
        }
        __syncthreads();
        for (int i = tid; i < count * 2 * kC; i += kThreads) {
          const int p = i / (2 * kC), k = i - p * 2 * kC;
          float* f = se_scratch + p * floats_per_position;
          float sum = b2[k];
          for (int j = 0; j < h; ++j) sum += f[7 * kC + j] * __half2float(w2[j * 2 * kC + k]);
          f[5 * kC + k] = k < kC ? 1.0f / (1.0f + expf(-sum)) : sum;
        }
        __syncthreads();
      }
      // flow = act(SE(v) + flow): each element's residual is read by the
      // thread that then writes it; no warp reads flow during conv2.
      if (finishes) {
#pragma unroll
        for (int slot = 0; slot < kSlots; ++slot) {
          const int p = slot / kMT, rt = row_tile(slot % kMT);
          if (p >= count) break;
          const float* gates = se_scratch + p * floats_per_position + 5 * kC;
          const int out_lo = padded(2 * rt * 8 + g), out_hi = padded((2 * rt + 1) * 8 + g);
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            const int o = col_half * 32 + nt * 8 + 2 * q;
            const float scale0 = has_se ? gates[o] : 1.0f, scale1 = has_se ? gates[o + 1] : 1.0f;
            const float shift0 = has_se ? gates[kC + o] : 0.0f, shift1 = has_se ? gates[kC + o + 1] : 0.0f;
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
              half2* at = reinterpret_cast<half2*>(flow(p) + (hh ? out_hi : out_lo) * kLdb + o);
              const half2 r = *at;
              const float v0 = acc[slot][nt][2 * hh] * scale0 + shift0 + __low2float(r);
              const float v1 = acc[slot][nt][2 * hh + 1] * scale1 + shift1 + __high2float(r);
              *at = __floats2half2_rn(activate_as<kAct>(v0, act), activate_as<kAct>(v1, act));
            }
          }
        }
      }
    }
    // The tower's output (and the head's, in mid) for these positions, then
    // the boards are free again.
    __syncthreads();
    for (int i = tid; i < count * 64 * kSquareVecs; i += kThreads) {
      const int p = i / (64 * kSquareVecs), rest = i - p * 64 * kSquareVecs;
      const int sq = rest / kSquareVecs, v = rest - sq * kSquareVecs;
      const long long at = static_cast<long long>(first + p) * 64 * kC + sq * kC + v * 8;
      *reinterpret_cast<uint4*>(y + at) = *reinterpret_cast<const uint4*>(flow(p) + padded(sq) * kLdb + v * 8);
      if (head)
        *reinterpret_cast<uint4*>(head_y + at) = *reinterpret_cast<const uint4*>(mid(p) + padded(sq) * kLdb + v * 8);
    }
    __syncthreads();
  }
  wait_copies(0);  // the last (empty) group: nothing is left in flight at exit
#endif
}

namespace tower_detail {
// A kernel variant: positions per block at a time, row tiles per warp,
// warp groups splitting K.
struct Variant {
  int positions, m_tiles, k_groups;
};
constexpr Variant kSingle{1, 1, 1};  // one position, 16 x 32 per warp
constexpr Variant kSplit{1, 2, 2};   // one position, 32 x 32 per warp, K split in two
constexpr Variant kPair{2, 1, 1};    // two positions, 16 x 32 of each per warp

inline size_t variant_bytes(const Variant& v, const ResnetTower& tower) {
  return shared_bytes(v.positions, tower.se_hidden, tower.blocks, v.m_tiles, v.k_groups);
}

// Every instantiation with_activation may launch gets the shared memory it
// needs above the 48 KB default (at network creation, not inside a capture).
template <int kP, int kMT, int kKGroups>
void allow_shared(size_t bytes) {
  auto allow = [&](const void* kernel) {
    GPU_CHECK(hipFuncSetAttribute(kernel, hipFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  };
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, Activation::Relu>));
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, Activation::None>));
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, Activation::Mish>));
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, Activation::Relu2>));
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, Activation::Swish>));
  allow(reinterpret_cast<const void*>(&resnet_tower_kernel<kP, kMT, kKGroups, kAnyActivation>));
}

template <int kP, int kMT, int kKGroups>
void launch(hipStream_t stream, const DeviceInfo& device, const ResnetTower& tower, int n, const half* x, half* y,
            half* head_y, Activation act) {
  // One resident block per multiprocessor (the shared memory allows no
  // more); each takes groups blockIdx.x, + grid, ...
  const int groups = (n + kP - 1) / kP;
  const int grid = groups < device.multiprocessors ? groups : device.multiprocessors;
  const size_t bytes = variant_bytes(Variant{kP, kMT, kKGroups}, tower);
  with_activation(act, [&](auto tag) {
    gpu_launch(resnet_tower_kernel<kP, kMT, kKGroups, decltype(tag)::value>, grid, kThreads, bytes, stream, n,
               tower.blocks, tower.se_hidden, tower.layers, x, y, static_cast<const half*>(tower.head_w), tower.head_b,
               head_y, act);
  });
  GPU_CHECK_LAUNCH();
}
}  // namespace tower_detail

#endif  // LC0ROCM_VENDOR_NVIDIA

}  // namespace lc0rocm
