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

template <typename T, bool kDepthBy4>
__global__ void fused_attention_kernel(T* out, const T* qkv, int width, const float* bias, const T* smolgen,
                                       int heads, int depth, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
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
  const int d_model = heads * depth;
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
    if (kDepthBy4) {
      // Q rows read 4 depth values at a time (one 16-byte shared load).
      for (int d = 0; d < depth; d += 4) {
        float k0[4], k1[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          k0[i] = ks[lane * pitch + d + i];
          k1[i] = keys_per_lane > 1 ? ks[(lane + lanes) * pitch + d + i] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < kRowsPerPass; ++r) {
          const float4 q4 = *reinterpret_cast<const float4*>(qs + (row0 + r) * depth + d);
          acc[r][0] += q4.x * k0[0] + q4.y * k0[1] + q4.z * k0[2] + q4.w * k0[3];
          acc[r][1] += q4.x * k1[0] + q4.y * k1[1] + q4.z * k1[2] + q4.w * k1[3];
        }
      }
    } else {
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
      // Probabilities read 4 keys at a time (one 16-byte shared load).
      for (int key = 0; key < 64; key += 4) {
        float v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = vs[(key + i) * depth + d];
#pragma unroll
        for (int r = 0; r < kRowsPerPass; ++r) {
          const float4 p4 = *reinterpret_cast<const float4*>(p + r * 64 + key);
          o[r] += p4.x * v[0] + p4.y * v[1] + p4.z * v[2] + p4.w * v[3];
        }
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
void fused_attention(T* out, const T* qkv, int qkv_stride, const float* bias, const T* smolgen, int batch,
                     int heads, int depth, int warp_size, hipStream_t stream) {
  if (batch == 0) return;
  check_warp_size(warp_size);
  if (depth < 1 || depth > kFusedMaxDepth)
    fail(LC0ROCM_INTERNAL_ERROR, "fused attention takes heads of depth 1.." +
                                     std::to_string(kFusedMaxDepth) + ", got " + std::to_string(depth));
  if (qkv_stride < 3 * heads * depth) fail(LC0ROCM_INTERNAL_ERROR, "fused attention: Q|K|V rows overlap");
  const size_t shared = fused_attention_shared_bytes(depth, warp_size);
  const float scale = 1.0f / sqrtf(static_cast<float>(depth));
  // Q rows and the probabilities sit at 16-byte aligned offsets of shared
  // memory (64 * (2 * depth + 1) and 64 * (3 * depth + 1) floats); Q rows
  // stay aligned when depth is a multiple of 4.
  if (depth % 4 == 0)
    gpu_launch(fused_attention_kernel<T, true>, batch * heads, kFusedThreads, shared, stream, out, qkv, qkv_stride,
               bias, smolgen, heads, depth, scale);
  else
    gpu_launch(fused_attention_kernel<T, false>, batch * heads, kFusedThreads, shared, stream, out, qkv, qkv_stride,
               bias, smolgen, heads, depth, scale);
  check_launch("fused_attention");
}

template void fused_attention<float>(float*, const float*, int, const float*, const float*, int, int,
                                     int, int, hipStream_t);
template void fused_attention<__half>(__half*, const __half*, int, const float*, const __half*, int,
                                      int, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
