// attn_head_stage.h - pieces the AMD matrix-instruction attentions share
// (attn_fused_attention_mfma.hip for CDNA, attn_fused_attention_rdna.hip for
// RDNA 3): staging one (position, head)'s Q, K and V in shared memory, and
// the grid of a kernel that strides over the items.
#pragma once

#include <algorithm>

#include "../gpu_compat.h"

namespace lc0rocm {
namespace attn {

// Q, K and V of head h from `rows` (the position's 64 Q|K|V rows, `width`
// apart, each part d_model wide) into q, k, v as half [64][kPitch], each
// value with its bias added in float and rounded once; 16-byte global
// loads, the block's kThreads threads striding over the pieces.
template <int kDepth, int kPitch, int kThreads>
__device__ __forceinline__ void stage_head_qkv(__half* q, __half* k, __half* v, const __half* rows, int width,
                                               int d_model, const float* bias, int h) {
  constexpr int kChunks = kDepth / 8;  // 16-byte pieces of a head's row
  for (int piece = threadIdx.x; piece < 3 * 64 * kChunks; piece += kThreads) {
    const int part = piece / (64 * kChunks);  // 0 Q, 1 K, 2 V
    const int r = (piece / kChunks) % 64, c = (piece % kChunks) * 8;
    const uint4 raw = *reinterpret_cast<const uint4*>(rows + static_cast<long long>(r) * width + part * d_model + c);
    const __half* e = reinterpret_cast<const __half*>(&raw);
    const float* b = bias + part * d_model + h * kDepth + c;
    __half* dst = (part == 0 ? q : part == 1 ? k : v) + r * kPitch + c;
#pragma unroll
    for (int j = 0; j < 8; ++j) dst[j] = __float2half(__half2float(e[j]) + b[j]);
  }
}

// Blocks for `kernel` striding over `items`: as many as the device keeps
// resident (the runtime's occupancy, as the NVIDIA kernels ask theirs), a
// block an item where it cannot say.
template <typename Kernel>
int resident_grid(Kernel kernel, int threads, int items, int multiprocessors) {
  int per_unit = 0;
  if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_unit, kernel, threads, 0) != hipSuccess) per_unit = 0;
  return per_unit > 0 ? std::max(1, std::min(items, per_unit * multiprocessors)) : items;
}

}  // namespace attn
}  // namespace lc0rocm
