// Fused attention on AMD CDNA's matrix cores (gfx908, gfx90a, gfx94x; waves
// of 64 lanes; half storage): the op of attn_fused_attention.hip (Q|K|V's
// bias, Q.K^T / sqrt(depth) + smolgen's logits, softmax over the 64 keys,
// . V, the heads side by side) with both products as 16 x 16 x 16 MFMA
// tiles (mfma_tile.h), float sums.
//
// An item is one (position, head); a block of 4 waves works through items
// (grid-stride), wave w owning query rows [16 w, 16 w + 16). Per item:
// - Q, K and V of the head go to shared memory as half [64][depth + 4],
//   each with its bias added in float and rounded once (the NVIDIA kernels
//   round Q + bias the same way); 16-byte global loads.
// - Q.K^T: for each tile of 16 keys, depth / 16 products. A's fragment is 4
//   consecutive values of a Q row, B's 4 of a K row (B = K^T), one 8-byte
//   shared load each. The scores land in C's layout: lane l holds rows
//   4 (l / 16) + i of its wave's 16, key l % 16 of the tile, so a row's 64
//   scores lie in the 16 lanes of one lane group, 4 tiles each: maximum and
//   sum by xor shuffles over 1, 2, 4 and 8 (within the group).
// - The probabilities go to the wave's [16][64 + 4] half tile in shared
//   memory and come back as A fragments; V's B fragments are read down its
//   columns (4 rows, one value each).
// - The output, 4 rows x depth / 16 tiles a lane, as half stores: a lane
//   group writes 16 consecutive values of a row.
// Shared memory at depth 32: 13.5 KB for Q|K|V and 8.5 KB for the
// probabilities. It is not yet pipelined (the next item's loads do not
// overlap this item's products, as they do on NVIDIA): no AMD GPU has run it.
// Checked on the CPU under HIP-CPU against a reference, through an emulation
// of the instruction's layout (tests/native_attention_hipcpu.cpp);
// NVIDIA builds get the launcher alone, which returns false.
#include "../attention_device.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_AMD)
#include "attn_head_stage.h"
#include "mfma_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_AMD)

namespace {

constexpr int kMfmaWave = 64;   // lanes of the wave an MFMA product spans (the instruction's, not a guess)
constexpr int kMfmaWaves = 4;   // a block: 4 waves of 16 query rows
constexpr int kMfmaThreads = kMfmaWave * kMfmaWaves;
constexpr int kRowPad = 4;      // halves after each shared row: 8 bytes, so rows 8-byte aligned and off-bank

template <int kDepth>
struct alignas(16) MfmaShared {
  static constexpr int kPitch = kDepth + kRowPad;  // Q, K, V rows
  static constexpr int kProbPitch = 64 + kRowPad;  // probability rows
  __half q[64 * kPitch];
  __half k[64 * kPitch];
  __half v[64 * kPitch];
  __half p[kMfmaWaves][16 * kProbPitch];
};

// Four consecutive halves from shared memory (8-byte aligned) as a fragment.
__device__ __forceinline__ MfmaHalves load_four(const __half* p) {
  MfmaHalves f;
  *reinterpret_cast<uint2*>(&f) = *reinterpret_cast<const uint2*>(p);
  return f;
}

// Max / sum over the 16 lanes of a lane group (xor 1..8 stays inside it).
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v = fmaxf(v, gpu_shfl_xor(v, mask));
  return v;
}
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v += gpu_shfl_xor(v, mask);
  return v;
}

template <int kDepth>
__global__ void __launch_bounds__(kMfmaThreads)
    fused_attention_mfma_kernel(__half* out, const __half* qkv, int width, const float* bias,
                                const __half* smolgen, int items, int heads, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using Shared = MfmaShared<kDepth>;
  constexpr int kPitch = Shared::kPitch;
  constexpr int kProbPitch = Shared::kProbPitch;
  __shared__ Shared s;
  const int wave = static_cast<int>(threadIdx.x) / kMfmaWave;
  const int lane = static_cast<int>(threadIdx.x) % kMfmaWave;
  const int group = lane / 16, col = lane % 16;  // C layout: rows 4 group + i, column col
  const int row0 = 16 * wave;
  const int d_model = heads * kDepth;

  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int n = item / heads, h = item - n * heads;
    const __half* rows = qkv + static_cast<long long>(n) * 64 * width + h * kDepth;
    __syncthreads();  // every wave is done with the last item's rows
    stage_head_qkv<kDepth, kPitch, kMfmaThreads>(s.q, s.k, s.v, rows, width, d_model, bias, h);
    __syncthreads();

    // Scores of the wave's 16 rows: tile t holds keys 16 t .. 16 t + 15.
    MfmaFloats score[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      score[t] = MfmaFloats{{0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
      for (int k0 = 0; k0 < kDepth; k0 += 16) {
        const MfmaHalves a = load_four(s.q + (row0 + col) * kPitch + k0 + 4 * group);
        const MfmaHalves b = load_four(s.k + (16 * t + col) * kPitch + k0 + 4 * group);
        score[t] = mfma_16x16x16(a, b, score[t]);
      }
    }

    // Softmax of each of the lane's 4 rows over its group's 16 lanes x 4 tiles.
    const __half* gen = smolgen != nullptr ? smolgen + static_cast<long long>(item) * 4096 : nullptr;
    __half* probs = s.p[wave];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = row0 + 4 * group + i;
      float m = -INFINITY;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        float v = score[t].v[i] * scale;
        if (gen != nullptr) v += __half2float(gen[row * 64 + 16 * t + col]);
        score[t].v[i] = v;
        m = fmaxf(m, v);
      }
      m = group_max(m);
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        score[t].v[i] = expf(score[t].v[i] - m);
        sum += score[t].v[i];
      }
      const float inv = 1.0f / group_sum(sum);
#pragma unroll
      for (int t = 0; t < 4; ++t) probs[(4 * group + i) * kProbPitch + 16 * t + col] = __float2half(score[t].v[i] * inv);
    }
    __syncthreads();  // the wave's probabilities are in shared memory

    // Output tile u: columns 16 u .. 16 u + 15 of the head, over the 64 keys.
#pragma unroll
    for (int u = 0; u < kDepth / 16; ++u) {
      MfmaFloats o{{0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
      for (int k0 = 0; k0 < 64; k0 += 16) {
        const MfmaHalves a = load_four(probs + col * kProbPitch + k0 + 4 * group);
        MfmaHalves b;
#pragma unroll
        for (int j = 0; j < 4; ++j) b.v[j] = s.v[(k0 + 4 * group + j) * kPitch + 16 * u + col];
        o = mfma_16x16x16(a, b, o);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long at = static_cast<long long>(n * 64 + row0 + 4 * group + i) * d_model + h * kDepth + 16 * u + col;
        out[at] = __float2half(o.v[i]);
      }
    }
  }
}

template <int kDepth>
void launch_mfma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
                 int heads, int multiprocessors, hipStream_t stream) {
  const int items = batch * heads;
  const int grid = resident_grid(fused_attention_mfma_kernel<kDepth>, kMfmaThreads, items, multiprocessors);
  const float scale = 1.0f / sqrtf(static_cast<float>(kDepth));
  gpu_launch(fused_attention_mfma_kernel<kDepth>, grid, kMfmaThreads, 0, stream, out, qkv, qkv_stride, bias, smolgen,
             items, heads, scale);
  check_launch("fused_attention_mfma");
}

}  // namespace

bool fused_attention_mfma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                          int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  if (!device.mfma_fp16 || device.warp_size != kMfmaWave || (depth != 16 && depth != 32)) return false;
  if (qkv_stride < 3 * heads * depth || qkv_stride % 8 != 0 || !aligned16(qkv) || !aligned16(bias)) return false;
  if (batch == 0) return true;
  if (depth == 16) launch_mfma<16>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.multiprocessors, stream);
  else launch_mfma<32>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.multiprocessors, stream);
  return true;
}

#else  // NVIDIA: no MFMA (attn_fused_attention_tc.hip has its tensor cores)

bool fused_attention_mfma(__half*, const __half*, int, const float*, const __half*, int, int, int, const DeviceInfo&,
                          hipStream_t) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
