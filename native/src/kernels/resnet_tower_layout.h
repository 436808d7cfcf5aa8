// resnet_tower_layout.h - what the two residual-tower kernels share
// (resnet_tower.hip: a position per block; resnet_tower_cluster.hip: a
// position per cluster of blocks): the layouts of boards, weights and SE
// units in shared memory and the copies that fill them. Device code of
// NVIDIA builds only (cp.async).
#pragma once
#include <cstddef>

#include "../gpu_compat.h"
#include "ops.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include "async_copy.h"

namespace lc0rocm {
namespace tower_detail {

constexpr int kC = limits::kTowerChannels;  // channels
constexpr int kPad = 8;                   // halves after each board square and weight row
constexpr int kLdb = kC + kPad;           // board square pitch, halves
constexpr int kK = 9 * kC;                // a layer's reduction: 9 taps x 64 channels
constexpr int kLdk = kK + kPad;           // weight row pitch, halves
constexpr int kBoardBytes = 100 * kLdb * 2;
constexpr int kSquareVecs = kC / 8;       // 16-byte vectors per board square

// An SE unit of `hidden` in shared memory: w1 [C][h] half, w2 [h][2C] half,
// b1 [h] float, b2 [2C] float (hidden % 4 == 0: every part whole 16-byte
// copies).
__host__ __device__ constexpr size_t se_bytes(int hidden) {
  return static_cast<size_t>(kC) * hidden * 2 + static_cast<size_t>(hidden) * 2 * kC * 2 + hidden * 4 + 2 * kC * 4;
}

// The layer table (ResidualBlockWeights [blocks]), rounded to 16 bytes.
__host__ __device__ constexpr size_t table_bytes(int blocks) {
  return (sizeof(ResidualBlockWeights) * blocks + 15) / 16 * 16;
}

// Padded board index of square s (rank s / 8, file s % 8): boards are
// zero-bordered 10 x 10, so that tap (ky, kx) of square (r, f) reads padded
// square (r + ky) * 10 + f + kx.
__device__ __forceinline__ int padded(int s) { return (s / 8 + 1) * 10 + s % 8 + 1; }

// The layer table from device memory, by words.
__device__ __forceinline__ void copy_layer_table(ResidualBlockWeights* table, const ResidualBlockWeights* layers,
                                                 int blocks, int tid, int threads) {
  constexpr int kWords = sizeof(ResidualBlockWeights) / sizeof(unsigned long long);
  static_assert(sizeof(ResidualBlockWeights) % sizeof(unsigned long long) == 0, "the table copies by words");
  const unsigned long long* from = reinterpret_cast<const unsigned long long*>(layers);
  unsigned long long* to = reinterpret_cast<unsigned long long*>(table);
  for (int i = tid; i < blocks * kWords; i += threads) to[i] = from[i];
}

// Zeroes the border squares of `count` consecutive boards (their inside is
// written before it is read).
__device__ __forceinline__ void zero_board_borders(half* boards, int count, int tid, int threads) {
  for (int i = tid; i < count * 100 * kSquareVecs; i += threads) {
    const int board = i / (100 * kSquareVecs), rest = i - board * 100 * kSquareVecs;
    const int p = rest / kSquareVecs, v = rest - p * kSquareVecs;
    const int rank = p / 10 - 1, file = p % 10 - 1;
    if (rank < 0 || rank >= 8 || file < 0 || file >= 8)
      *reinterpret_cast<uint4*>(boards + board * (kBoardBytes / 2) + p * kLdb + v * 8) = make_uint4(0, 0, 0, 0);
  }
}

// cp.async of weight rows [rows][kK] (device memory) into [rows][kLdk]
// (shared), and of their float biases [rows] (rows % 4 == 0).
__device__ __forceinline__ void fetch_weight_rows(half* to, float* bias_to, const half* from, const float* bias,
                                                  int rows, int tid, int threads) {
  constexpr int kVecs = kK / 8;  // 16-byte copies per weight row
  for (int i = tid; i < rows * kVecs; i += threads) {
    const int r = i / kVecs, v = i - r * kVecs;
    copy16_async(to + r * kLdk + v * 8, from + r * kK + v * 8);
  }
  if (tid < rows / 4) copy16_async(bias_to + tid * 4, bias + tid * 4);
}

// cp.async of an SE unit into se_bytes(se.hidden) of shared memory: w1, w2,
// b1, b2 one after another.
__device__ __forceinline__ void fetch_se_unit(unsigned char* to, const SeWeights& se, int tid, int threads) {
  const int h = se.hidden;
  struct Part {
    const void* from;
    int vecs;  // 16-byte copies
  };
  const Part parts[4] = {{se.w1, kC * h / 8}, {se.w2, h * 2 * kC / 8}, {se.b1, h / 4}, {se.b2, 2 * kC / 4}};
  for (const Part& part : parts) {
    const unsigned char* from = static_cast<const unsigned char*>(part.from);
    for (int i = tid; i < part.vecs; i += threads) copy16_async(to + 16 * i, from + 16 * i);
    to += 16 * part.vecs;
  }
}

}  // namespace tower_detail
}  // namespace lc0rocm
#endif
