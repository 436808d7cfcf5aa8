// Fused attention on AMD's matrix instructions (half storage): the op of
// attn_fused_attention.hip (Q|K|V's bias, Q.K^T / sqrt(depth) + smolgen's
// logits, softmax over the 64 keys, . V, the heads side by side) with both
// products as 16 x 16 x 16 tiles with float sums, written once against the
// tile traits of amd_matrix_tile.h: CDNA's MFMA (gfx908, gfx90a, gfx94x;
// waves of 64 lanes) and RDNA 3's WMMA (gfx11; waves of 32).
//
// An item is one (position, head); a block of 4 waves works through items
// (grid-stride), wave w owning query rows [16 w, 16 w + 16). Per item:
// - Q, K and V of the head go to shared memory as half [64][depth + pad],
//   each with its bias added in float and rounded once (the NVIDIA kernels
//   round Q + bias the same way); 16-byte global loads.
// - Q.K^T: for each tile of 16 keys, depth / 16 products. A's fragment is a
//   piece of a Q row, B's of a K row (B = K^T). The scores land in C's
//   layout: a lane holds kRows rows of its wave's 16, key l % 16 of the
//   tile, so a row's 64 scores lie in the 16 lanes of one lane group, 4
//   tiles each: maximum and sum by xor shuffles within the group.
// - The probabilities go to the wave's [16][64 + pad] half tile in shared
//   memory and come back as A fragments; V's B fragments are read down its
//   columns.
// - The output, kRows rows x depth / 16 tiles a lane, as half stores: a lane
//   group writes 16 consecutive values of a row.
// Shared memory at depth 32: 13.5 KB (CDNA) / 15 KB (RDNA) for Q|K|V and
// 8.5 / 9 KB for the probabilities. It is not pipelined (the next item's
// loads do not overlap this item's products, as they do on NVIDIA): no AMD
// GPU has run it. Checked on the CPU under HIP-CPU against a reference,
// through an emulation of each instruction's layout
// (tests/native_attention_hipcpu.cpp); NVIDIA builds get the launcher
// alone, which returns false.
#include "../attention_device.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_AMD)
#include <algorithm>

#include "amd_matrix_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_AMD)

namespace {

constexpr int kWaves = 4;  // a block: 4 waves of 16 query rows

template <typename Tile, int kDepth>
struct alignas(16) AmdShared {
  static constexpr int kPitch = kDepth + Tile::kRowPad;  // Q, K, V rows
  static constexpr int kProbPitch = 64 + Tile::kRowPad;  // probability rows
  __half q[64 * kPitch];
  __half k[64 * kPitch];
  __half v[64 * kPitch];
  __half p[kWaves][16 * kProbPitch];
};

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

template <typename Tile, int kDepth>
__global__ void __launch_bounds__(Tile::kWave * kWaves)
    fused_attention_amd_kernel(__half* out, const __half* qkv, int width, const float* bias, const __half* smolgen,
                               int items, int heads, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int kThreads = Tile::kWave * kWaves;
  using Shared = AmdShared<Tile, kDepth>;
  constexpr int kPitch = Shared::kPitch;
  constexpr int kProbPitch = Shared::kProbPitch;
  __shared__ Shared s;
  const int wave = static_cast<int>(threadIdx.x) / Tile::kWave;
  const int lane = static_cast<int>(threadIdx.x) % Tile::kWave;
  const int group = lane / 16, col = lane % 16;  // C layout: column col, rows Tile::c_row(group, i)
  const int row0 = 16 * wave;
  const int d_model = heads * kDepth;

  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int n = item / heads, h = item - n * heads;
    const __half* rows = qkv + static_cast<long long>(n) * 64 * width + h * kDepth;
    __syncthreads();  // every wave is done with the last item's rows
    stage_head_qkv<kDepth, kPitch, kThreads>(s.q, s.k, s.v, rows, width, d_model, bias, h);
    __syncthreads();

    // Scores of the wave's 16 rows: tile t holds keys 16 t .. 16 t + 15.
    typename Tile::Floats score[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      typename Tile::Floats acc = {};
#pragma unroll
      for (int k0 = 0; k0 < kDepth; k0 += 16) {
        const auto a = Tile::row_fragment(s.q, row0 + col, kPitch, k0, group);
        const auto b = Tile::row_fragment(s.k, 16 * t + col, kPitch, k0, group);
        acc = Tile::product(a, b, acc);
      }
      score[t] = acc;
    }

    // Softmax of each of the lane's rows over its group's 16 lanes x 4 tiles.
    const __half* gen = smolgen != nullptr ? smolgen + static_cast<long long>(item) * 4096 : nullptr;
    __half* probs = s.p[wave];
#pragma unroll
    for (int i = 0; i < Tile::kRows; ++i) {
      const int row = row0 + Tile::c_row(group, i);
      float m = -INFINITY;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        float v = score[t].v[i] * scale;
        if (gen != nullptr) v += __half2float(gen[row * 64 + 16 * t + col]);
        score[t].v[i] = v;
        m = fmaxf(m, v);
      }
      m = lane_group_max(m);
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        score[t].v[i] = expf(score[t].v[i] - m);
        sum += score[t].v[i];
      }
      const float inv = 1.0f / lane_group_sum(sum);
#pragma unroll
      for (int t = 0; t < 4; ++t)
        probs[Tile::c_row(group, i) * kProbPitch + 16 * t + col] = __float2half(score[t].v[i] * inv);
    }
    __syncthreads();  // the wave's probabilities are in shared memory

    // Output tile u: columns 16 u .. 16 u + 15 of the head, over the 64 keys.
#pragma unroll
    for (int u = 0; u < kDepth / 16; ++u) {
      typename Tile::Floats o = {};
#pragma unroll
      for (int k0 = 0; k0 < 64; k0 += 16) {
        const auto a = Tile::row_fragment(probs, col, kProbPitch, k0, group);
        const auto b = Tile::column_fragment(s.v, 16 * u + col, kPitch, k0, group);
        o = Tile::product(a, b, o);
      }
#pragma unroll
      for (int i = 0; i < Tile::kRows; ++i) {
        const long long at =
            static_cast<long long>(n * 64 + row0 + Tile::c_row(group, i)) * d_model + h * kDepth + 16 * u + col;
        out[at] = __float2half(o.v[i]);
      }
    }
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

template <typename Tile, int kDepth>
void launch(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
            int heads, int multiprocessors, hipStream_t stream) {
  constexpr int kThreads = Tile::kWave * kWaves;
  const int items = batch * heads;
  const int grid = resident_grid(fused_attention_amd_kernel<Tile, kDepth>, kThreads, items, multiprocessors);
  const float scale = 1.0f / sqrtf(static_cast<float>(kDepth));
  gpu_launch(fused_attention_amd_kernel<Tile, kDepth>, grid, kThreads, 0, stream, out, qkv, qkv_stride, bias, smolgen,
             items, heads, scale);
  check_launch("fused_attention_amd");
}

template <typename Tile>
void launch(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
            int heads, int depth, int multiprocessors, hipStream_t stream) {
  if (depth == 16) launch<Tile, 16>(out, qkv, qkv_stride, bias, smolgen, batch, heads, multiprocessors, stream);
  else launch<Tile, 32>(out, qkv, qkv_stride, bias, smolgen, batch, heads, multiprocessors, stream);
}

}  // namespace

bool fused_attention_amd(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                         int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  const bool mfma = limits::mfma_attention_fits(device, depth);
  if (!mfma && !limits::rdna_attention_fits(device, depth)) return false;
  if (qkv_stride < 3 * heads * depth || qkv_stride % 8 != 0 || !aligned16(qkv) || !aligned16(bias)) return false;
  if (batch == 0) return true;
  const int sms = device.multiprocessors;
  if (mfma) launch<CdnaMfma>(out, qkv, qkv_stride, bias, smolgen, batch, heads, depth, sms, stream);
  else launch<RdnaWmma>(out, qkv, qkv_stride, bias, smolgen, batch, heads, depth, sms, stream);
  return true;
}

#else  // NVIDIA: no MFMA or RDNA WMMA (attn_fused_attention_tc.hip has its tensor cores)

bool fused_attention_amd(__half*, const __half*, int, const float*, const __half*, int, int, int, const DeviceInfo&,
                         hipStream_t) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
