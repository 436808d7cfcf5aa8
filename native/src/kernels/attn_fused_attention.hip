// Scaled dot-product attention of every (position, head) in one kernel:
// bias add of the fused Q|K|V projection, scores Q.K^T / sqrt(depth), plus
// smolgen's logits, softmax over the keys, softmax . V, written with the
// heads side by side. Replaces split_heads + 2 batched GEMMs + softmax64 +
// merge_heads for heads of depth <= kFusedMaxDepth; the scores never leave
// the chip.
//
// One block per (position, head): K, V and Q of the head go to shared memory
// as float; each warp takes kRowsPerPass query rows at a time (register
// blocking: every K/V value read from shared memory feeds kRowsPerPass
// products). Lanes own keys (scores) and then depth columns (output); the
// softmax reduces with shuffles over the device's warp width.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

constexpr int kFusedThreads = 256;
constexpr int kRowsPerPass = 4;

template <typename T>
__global__ void fused_attention_kernel(T* out, const T* qkv, const float* bias, const T* smolgen,
                                       int heads, int depth, float scale) {
  extern __shared__ float shared[];
  const int lanes = warpSize;
  const int warps = blockDim.x / lanes;
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int keys_per_lane = 64 / lanes;  // 1 or 2
  const int pitch = depth + 1;           // K rows padded: lanes reading different keys hit different banks
  float* ks = shared;                    // [64][pitch]
  float* vs = ks + 64 * pitch;           // [64][depth]
  float* qs = vs + 64 * depth;           // [64][depth]
  float* probs = qs + 64 * depth;        // [warps][kRowsPerPass][64]

  const int nh = blockIdx.x;  // position * heads + head
  const int n = nh / heads, h = nh - n * heads;
  const int d_model = heads * depth, width = 3 * d_model;
  const T* rows = qkv + static_cast<long long>(n) * 64 * width;
  for (int i = threadIdx.x; i < 64 * depth; i += blockDim.x) {
    const int r = i / depth, d = i - r * depth;
    const int col = h * depth + d;
    const long long at = static_cast<long long>(r) * width + col;
    qs[r * depth + d] = load_f(rows, at) + bias[col];
    ks[r * pitch + d] = load_f(rows, at + d_model) + bias[d_model + col];
    vs[r * depth + d] = load_f(rows, at + 2 * d_model) + bias[2 * d_model + col];
  }
  __syncthreads();

  const T* gen = smolgen != nullptr ? smolgen + static_cast<long long>(nh) * 4096 : nullptr;
  float* p = probs + warp * kRowsPerPass * 64;
  // Every warp runs the same number of passes (64 / (warps * kRowsPerPass)),
  // so the block barriers below are reached by all threads.
  for (int row0 = warp * kRowsPerPass; row0 < 64; row0 += warps * kRowsPerPass) {
    // Loops over j run to the fixed bound 2 (a 32-wide warp's keys per
    // lane) so the accumulators stay in registers; a 64-wide warp skips j = 1.
    float acc[kRowsPerPass][2];
#pragma unroll
    for (int r = 0; r < kRowsPerPass; ++r) acc[r][0] = acc[r][1] = 0.0f;
    for (int d = 0; d < depth; ++d) {
      const float k0 = ks[lane * pitch + d];
      const float k1 = keys_per_lane > 1 ? ks[(lane + lanes) * pitch + d] : 0.0f;
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r) {
        const float qv = qs[(row0 + r) * depth + d];
        acc[r][0] += qv * k0;
        acc[r][1] += qv * k1;
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerPass; ++r) {
      float m = -INFINITY;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if (j < keys_per_lane) {
          float s = acc[r][j] * scale;
          if (gen != nullptr) s += load_f(gen, (row0 + r) * 64 + lane + j * lanes);
          acc[r][j] = s;
          m = fmaxf(m, s);
        }
      }
      m = warp_max(m);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        if (j < keys_per_lane) {
          acc[r][j] = expf(acc[r][j] - m);
          sum += acc[r][j];
        }
      }
      const float inv = 1.0f / warp_sum(sum);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        if (j < keys_per_lane) p[r * 64 + lane + j * lanes] = acc[r][j] * inv;
    }
    __syncthreads();
    for (int d = lane; d < depth; d += lanes) {
      float o[kRowsPerPass];
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r) o[r] = 0.0f;
      for (int key = 0; key < 64; ++key) {
        const float v = vs[key * depth + d];
#pragma unroll
        for (int r = 0; r < kRowsPerPass; ++r) o[r] += p[r * 64 + key] * v;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerPass; ++r)
        store_f(out, static_cast<long long>(n * 64 + row0 + r) * d_model + h * depth + d, o[r]);
    }
    __syncthreads();  // p is rewritten by the next pass
  }
}

size_t fused_attention_shared_bytes(int depth, int warp_size) {
  const int warps = kFusedThreads / warp_size;
  return sizeof(float) * (64 * (depth + 1) + 2 * 64 * depth + warps * kRowsPerPass * 64);
}

template <typename T>
void fused_attention(T* out, const T* qkv, const float* bias, const T* smolgen, int batch,
                     int heads, int depth, int warp_size, hipStream_t stream) {
  if (batch == 0) return;
  check_warp_size(warp_size);
  if (depth < 1 || depth > kFusedMaxDepth)
    fail(LC0ROCM_INTERNAL_ERROR, "fused attention takes heads of depth 1.." +
                                     std::to_string(kFusedMaxDepth) + ", got " + std::to_string(depth));
  fused_attention_kernel<T><<<batch * heads, kFusedThreads, fused_attention_shared_bytes(depth, warp_size),
                              stream>>>(out, qkv, bias, smolgen, heads, depth,
                                        1.0f / sqrtf(static_cast<float>(depth)));
  check_launch("fused_attention");
}

template void fused_attention<float>(float*, const float*, const float*, const float*, int, int,
                                     int, int, hipStream_t);
template void fused_attention<__half>(__half*, const __half*, const float*, const __half*, int,
                                      int, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
