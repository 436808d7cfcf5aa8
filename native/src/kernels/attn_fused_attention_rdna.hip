// Fused attention on AMD RDNA 3's matrix instruction (gfx11; waves of 32
// lanes; half storage): the op of attn_fused_attention.hip (Q|K|V's bias,
// Q.K^T / sqrt(depth) + smolgen's logits, softmax over the 64 keys, . V,
// the heads side by side) with both products as 16 x 16 x 16 WMMA tiles
// (rdna_wmma_tile.h), float sums. The MFMA kernel's plan
// (attn_fused_attention_mfma.hip) in RDNA 3's layout.
//
// An item is one (position, head); a block of 4 waves works through items
// (grid-stride), wave w owning query rows [16 w, 16 w + 16). Per item:
// - Q, K and V of the head go to shared memory as half [64][depth + 8],
//   each with its bias added in float and rounded once; 16-byte global loads.
// - Q.K^T: for each tile of 16 keys, depth / 16 products. A's fragment is
//   16 consecutive values of a Q row, B's 16 of a K row (B = K^T): two
//   16-byte shared loads each (the 8 halves of padding keep rows 16-byte
//   aligned). The scores land in C's layout: lane l holds rows 2 i + l / 16
//   of its wave's 16 (i = 0..7), key l % 16 of the tile, so a row's 64
//   scores lie in the 16 lanes of one half-wave, 4 tiles each: maximum and
//   sum by xor shuffles over 1, 2, 4 and 8 (within the half).
// - The probabilities go to the wave's [16][64 + 8] half tile in shared
//   memory and come back as A fragments (rows); V's B fragments are read
//   down its columns (16 rows, one value each).
// - The output, 8 rows x depth / 16 tiles a lane, as half stores: a
//   half-wave writes 16 consecutive values of a row.
// Shared memory at depth 32: 15 KB for Q|K|V and 9 KB for the
// probabilities. Not pipelined, and no AMD GPU has run it. Checked on the
// CPU under HIP-CPU against a reference, through an emulation of the
// instruction's layout (tests/native_attention_hipcpu.cpp); NVIDIA builds
// get the launcher alone, which returns false.
#include "../attention_device.h"
#include "aligned.h"

#if defined(LC0ROCM_VENDOR_AMD)
#include "attn_head_stage.h"
#include "rdna_wmma_tile.h"
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_AMD)

namespace {

constexpr int kRdnaWave = 32;   // lanes of the wave a WMMA product spans (the instruction's, not a guess)
constexpr int kRdnaWaves = 4;   // a block: 4 waves of 16 query rows
constexpr int kRdnaThreads = kRdnaWave * kRdnaWaves;
constexpr int kRdnaRowPad = 8;      // halves after each shared row: 16 bytes, so rows stay 16-byte aligned

template <int kDepth>
struct alignas(16) RdnaShared {
  static constexpr int kPitch = kDepth + kRdnaRowPad;  // Q, K, V rows
  static constexpr int kProbPitch = 64 + kRdnaRowPad;  // probability rows
  __half q[64 * kPitch];
  __half k[64 * kPitch];
  __half v[64 * kPitch];
  __half p[kRdnaWaves][16 * kProbPitch];
};

// Sixteen consecutive halves from shared memory (16-byte aligned) as a fragment.
__device__ __forceinline__ RdnaHalves load_sixteen(const __half* p) {
  RdnaHalves f;
  reinterpret_cast<uint4*>(&f)[0] = reinterpret_cast<const uint4*>(p)[0];
  reinterpret_cast<uint4*>(&f)[1] = reinterpret_cast<const uint4*>(p)[1];
  return f;
}

// Max / sum over the 16 lanes of a half-wave (xor 1..8 stays inside it).
__device__ __forceinline__ float half_wave_max(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v = fmaxf(v, gpu_shfl_xor(v, mask));
  return v;
}
__device__ __forceinline__ float half_wave_sum(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v += gpu_shfl_xor(v, mask);
  return v;
}

template <int kDepth>
__global__ void __launch_bounds__(kRdnaThreads)
    fused_attention_rdna_kernel(__half* out, const __half* qkv, int width, const float* bias,
                                const __half* smolgen, int items, int heads, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  using Shared = RdnaShared<kDepth>;
  constexpr int kPitch = Shared::kPitch;
  constexpr int kProbPitch = Shared::kProbPitch;
  __shared__ Shared s;
  const int wave = static_cast<int>(threadIdx.x) / kRdnaWave;
  const int lane = static_cast<int>(threadIdx.x) % kRdnaWave;
  const int half = lane / 16, col = lane % 16;  // C layout: rows 2 i + half, column col
  const int row0 = 16 * wave;
  const int d_model = heads * kDepth;

  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int n = item / heads, h = item - n * heads;
    const __half* rows = qkv + static_cast<long long>(n) * 64 * width + h * kDepth;
    __syncthreads();  // every wave is done with the last item's rows
    stage_head_qkv<kDepth, kPitch, kRdnaThreads>(s.q, s.k, s.v, rows, width, d_model, bias, h);
    __syncthreads();

    // Scores of the wave's 16 rows: tile t holds keys 16 t .. 16 t + 15.
    RdnaFloats score[4];
#pragma unroll
    for (int t = 0; t < 4; ++t) {
      RdnaFloats acc = {};
#pragma unroll
      for (int k0 = 0; k0 < kDepth; k0 += 16) {
        const RdnaHalves a = load_sixteen(s.q + (row0 + col) * kPitch + k0);
        const RdnaHalves b = load_sixteen(s.k + (16 * t + col) * kPitch + k0);
        acc = rdna_wmma_16x16x16(a, b, acc);
      }
      score[t] = acc;
    }

    // Softmax of each of the lane's 8 rows over its half-wave's 16 lanes x 4 tiles.
    const __half* gen = smolgen != nullptr ? smolgen + static_cast<long long>(item) * 4096 : nullptr;
    __half* probs = s.p[wave];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int row = row0 + 2 * i + half;
      float m = -INFINITY;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        float v = score[t].v[i] * scale;
        if (gen != nullptr) v += __half2float(gen[row * 64 + 16 * t + col]);
        score[t].v[i] = v;
        m = fmaxf(m, v);
      }
      m = half_wave_max(m);
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        score[t].v[i] = expf(score[t].v[i] - m);
        sum += score[t].v[i];
      }
      const float inv = 1.0f / half_wave_sum(sum);
#pragma unroll
      for (int t = 0; t < 4; ++t) probs[(2 * i + half) * kProbPitch + 16 * t + col] = __float2half(score[t].v[i] * inv);
    }
    __syncthreads();  // the wave's probabilities are in shared memory

    // Output tile u: columns 16 u .. 16 u + 15 of the head, over the 64 keys.
#pragma unroll
    for (int u = 0; u < kDepth / 16; ++u) {
      RdnaFloats o = {};
#pragma unroll
      for (int k0 = 0; k0 < 64; k0 += 16) {
        const RdnaHalves a = load_sixteen(probs + col * kProbPitch + k0);
        RdnaHalves b;
#pragma unroll
        for (int j = 0; j < 16; ++j) b.v[j] = s.v[(k0 + j) * kPitch + 16 * u + col];
        o = rdna_wmma_16x16x16(a, b, o);
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const long long at = static_cast<long long>(n * 64 + row0 + 2 * i + half) * d_model + h * kDepth + 16 * u + col;
        out[at] = __float2half(o.v[i]);
      }
    }
  }
}

template <int kDepth>
void launch_rdna(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen, int batch,
                 int heads, int multiprocessors, hipStream_t stream) {
  const int items = batch * heads;
  const int grid = resident_grid(fused_attention_rdna_kernel<kDepth>, kRdnaThreads, items, multiprocessors);
  const float scale = 1.0f / sqrtf(static_cast<float>(kDepth));
  gpu_launch(fused_attention_rdna_kernel<kDepth>, grid, kRdnaThreads, 0, stream, out, qkv, qkv_stride, bias, smolgen,
             items, heads, scale);
  check_launch("fused_attention_rdna");
}

}  // namespace

bool fused_attention_rdna(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                          int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  if (!device.rdna_wmma_fp16 || device.warp_size != kRdnaWave || (depth != 16 && depth != 32)) return false;
  if (qkv_stride < 3 * heads * depth || qkv_stride % 8 != 0 || !aligned16(qkv) || !aligned16(bias)) return false;
  if (batch == 0) return true;
  if (depth == 16) launch_rdna<16>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.multiprocessors, stream);
  else launch_rdna<32>(out, qkv, qkv_stride, bias, smolgen, batch, heads, device.multiprocessors, stream);
  return true;
}

#else  // NVIDIA: no WMMA of RDNA's (attn_fused_attention_tc.hip has its tensor cores)

bool fused_attention_rdna(__half*, const __half*, int, const float*, const __half*, int, int, int, const DeviceInfo&,
                          hipStream_t) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
