// Fused attention on tensor cores (NVIDIA, fp16 storage): the same op as
// attn_fused_attention.hip (bias add of the Q|K|V projection, Q.K^T /
// sqrt(depth) + smolgen, softmax over the keys, . V, heads side by side) with
// both products as 16x16x16 wmma tiles (half inputs, float accumulation).
//
// An item is one (position, head); a block of 64 / 16 = 4 warps, each owning
// 16 query rows, works through items (as many blocks as fit on the device,
// striding over the items). Q, K, V of an item go to shared memory as half
// (bias added in float, then rounded, as lc0's own fp16 path does); then the
// next item's Q|K|V loads are issued, to arrive while this item's products
// run. A warp's 16 x 64 scores land in its float scratch; softmax (a lane
// pair per row, so the warp's 16 rows reduce side by side with one shuffle
// each, with smolgen's logits fetched to registers before the products)
// writes half probabilities over them, which feed the P.V tiles; the output
// goes back through the same scratch to 16-byte global stores. 32.5 KB of
// shared memory per block at depth 32. Design and measurements:
// native/ATTENTION_FUSED.md.
//
// AMD: nvcuda::wmma does not exist there (rocWMMA is another header and
// API), so under hipcc this file only defines a stub that returns false and
// the caller runs the scalar kernel (attn_fused_attention.hip). Likewise for
// float storage and head depths that are not a multiple of 16.
#include "../attention_device.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
#include <mma.h>

#include <algorithm>
#endif

namespace lc0rocm {
namespace attn {

#if defined(LC0ROCM_VENDOR_NVIDIA)

namespace wmma = nvcuda::wmma;

constexpr int kTile = 16;                   // wmma tile edge
constexpr int kTcWarps = 64 / kTile;        // one warp per 16 query rows
constexpr int kPadHalf = 8;                 // 16 bytes of padding per half row
constexpr int kPadFloat = 4;                // 16 bytes of padding per float row
constexpr int kScorePitch = 64 + kPadFloat; // float scratch row (scores, then output)

template <int kDepth>
__host__ __device__ constexpr int tc_pitch() {
  return kDepth + kPadHalf;
}

// Q, K, V [3][64][pitch] half, then one [16][kScorePitch] float scratch per
// warp: the scores, overwritten in place by the half probabilities (same
// byte pitch, so kProbPitch = 2 * kScorePitch halves), then the output.
constexpr int kProbPitch = 2 * kScorePitch;
template <int kDepth>
constexpr size_t tc_shared_bytes() {
  return sizeof(__half) * 3 * 64 * tc_pitch<kDepth>() +
         sizeof(float) * kTcWarps * kTile * kScorePitch;
}

// 8 halves (16 bytes) as a vector.
union Half8 {
  uint4 raw;
  __half h[8];
};

template <int kDepth>
__global__ void fused_attention_tc_kernel(__half* out, const __half* qkv, const float* bias,
                                          const __half* smolgen, int items, int heads, float scale) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  extern __shared__ __align__(128) unsigned char shared_raw[];
  constexpr int P = tc_pitch<kDepth>();
  constexpr int kDepthTiles = kDepth / kTile;
  __half* qs = reinterpret_cast<__half*>(shared_raw);  // [64][P]
  __half* ks = qs + 64 * P;
  __half* vs = ks + 64 * P;
  const int lanes = warpSize;
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  float* scores = reinterpret_cast<float*>(vs + 64 * P) + warp * kTile * kScorePitch;  // [16][68]
  __half* probs = reinterpret_cast<__half*>(scores);  // [16][136], row r over score row r

  const int d_model = heads * kDepth, width = 3 * d_model;
  const int row0 = warp * kTile;
  // Softmax layout: lanes 2r and 2r+1 own row r of the warp's 16, columns
  // [32 * half, 32 * half + 32) (launched with 32-lane warps only).
  const int my_row = lane / 2, my_col0 = (lane % 2) * 32;
  const bool has_gen = smolgen != nullptr;

  // A thread's share of an item's Q|K|V: 16-byte loads, all in flight at
  // once (6 per thread at depth 32). The next item's are issued before this
  // item's products, so they arrive while the tensor cores work.
  constexpr int kVecs = kDepth / 8;  // per row and matrix
  constexpr int kTotal = 3 * 64 * kVecs;
  constexpr int kThreads = kTcWarps * 32;
  constexpr int kPerThread = (kTotal + kThreads - 1) / kThreads;
  Half8 in[kPerThread];
  auto issue_loads = [&](int item) {
    const int n = item / heads, h = item - n * heads;
    const __half* rows = qkv + static_cast<long long>(n) * 64 * width;
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kThreads;
      if (i < kTotal) {
        const int m = i / (64 * kVecs);
        const int rest = i - m * 64 * kVecs;
        const int r = rest / kVecs, v = rest - r * kVecs;
        in[u].raw = *reinterpret_cast<const uint4*>(rows + static_cast<long long>(r) * width +
                                                    m * d_model + h * kDepth + v * 8);
      }
    }
  };

  int nh = blockIdx.x;  // item = position * heads + head; blocks stride over the items
  if (nh >= items) return;
  issue_loads(nh);
  for (; nh < items; nh += gridDim.x) {
    const int n = nh / heads, h = nh - n * heads;

    // Q, K, V + bias -> shared (bias added in float from two float4 loads per
    // 8 values).
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int i = threadIdx.x + u * kThreads;
      if (i < kTotal) {
        const int m = i / (64 * kVecs);
        const int rest = i - m * 64 * kVecs;
        const int r = rest / kVecs, v = rest - r * kVecs;
        const int col = m * d_model + h * kDepth + v * 8;
        const float4 b0 = *reinterpret_cast<const float4*>(bias + col);
        const float4 b1 = *reinterpret_cast<const float4*>(bias + col + 4);
        const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int k = 0; k < 8; ++k) in[u].h[k] = __float2half(__half2float(in[u].h[k]) + b[k]);
        *reinterpret_cast<uint4*>(qs + m * 64 * P + r * P + v * 8) = in[u].raw;
      }
    }
    __syncthreads();

    // Smolgen's logits of this lane's softmax row (64 contiguous bytes per
    // lane, the warp's 16 rows in one 2 KB sweep), then the next item's
    // Q|K|V: both in flight during the products.
    uint4 g[4];
    if (has_gen) {
      const uint4* gen = reinterpret_cast<const uint4*>(smolgen + static_cast<long long>(nh) * 4096 +
                                                        (row0 + my_row) * 64 + my_col0);
#pragma unroll
      for (int j = 0; j < 4; ++j) g[j] = gen[j];
    }
    if (nh + static_cast<int>(gridDim.x) < items) issue_loads(nh + gridDim.x);

    // scores [16][64] = Q rows . K^T
#pragma unroll
    for (int kt = 0; kt < 64 / kTile; ++kt) {
      wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int d = 0; d < kDepth; d += kTile) {
        wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::col_major> b;
        wmma::load_matrix_sync(a, qs + row0 * P + d, P);
        wmma::load_matrix_sync(b, ks + kt * kTile * P + d, P);  // K^T: K row-major is K^T col-major
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(scores + kt * kTile, acc, kScorePitch, wmma::mem_row_major);
    }
    __syncwarp();

    // softmax(scores * scale + smolgen) -> probs (half), written over the
    // row's own scores. A row is two lanes' (one shuffle per reduction, the
    // 16 rows side by side); both have read the row before either writes it.
    float s[32];
    {
      const float* src = scores + my_row * kScorePitch + my_col0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 raw = *reinterpret_cast<const float4*>(src + 4 * j);
        s[4 * j] = raw.x * scale;
        s[4 * j + 1] = raw.y * scale;
        s[4 * j + 2] = raw.z * scale;
        s[4 * j + 3] = raw.w * scale;
      }
    }
    if (has_gen) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const Half8 gv{g[j]};
#pragma unroll
        for (int k = 0; k < 8; ++k) s[8 * j + k] += __half2float(gv.h[k]);
      }
    }
    float m = s[0];
#pragma unroll
    for (int k = 1; k < 32; ++k) m = fmaxf(m, s[k]);
    m = fmaxf(m, gpu_shfl_xor(m, 1));
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      s[k] = expf(s[k] - m);
      sum += s[k];
    }
    sum += gpu_shfl_xor(sum, 1);
    const float inv = 1.0f / sum;
    __syncwarp();
    {
      uint4* dst = reinterpret_cast<uint4*>(probs + my_row * kProbPitch + my_col0);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        Half8 pv;
#pragma unroll
        for (int k = 0; k < 8; ++k) pv.h[k] = __float2half(s[8 * j + k] * inv);
        dst[j] = pv.raw;
      }
    }
    __syncwarp();

    // out [16][depth] = probs . V; every product is done before the results go
    // to the scratch (over the probabilities), then 16-byte global stores.
    wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float> o[kDepthTiles];
#pragma unroll
    for (int dt = 0; dt < kDepthTiles; ++dt) {
      wmma::fill_fragment(o[dt], 0.0f);
#pragma unroll
      for (int k = 0; k < 64; k += kTile) {
        wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, __half, wmma::row_major> b;
        wmma::load_matrix_sync(a, probs + k, kProbPitch);
        wmma::load_matrix_sync(b, vs + k * P + dt * kTile, P);
        wmma::mma_sync(o[dt], a, b, o[dt]);
      }
    }
    __syncwarp();
#pragma unroll
    for (int dt = 0; dt < kDepthTiles; ++dt)
      wmma::store_matrix_sync(scores + dt * kTile, o[dt], kScorePitch, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < kTile * kVecs; i += lanes) {
      const int r = i / kVecs, v = i - r * kVecs;
      Half8 res;
#pragma unroll
      for (int k = 0; k < 8; ++k) res.h[k] = __float2half(scores[r * kScorePitch + v * 8 + k]);
      *reinterpret_cast<uint4*>(out + static_cast<long long>(n * 64 + row0 + r) * d_model +
                                h * kDepth + v * 8) = res.raw;
    }
    __syncthreads();  // every warp is done with this item's K and V before the next overwrites them
  }
#endif
}

// Blocks that fit on the device at once (multiprocessors x resident blocks
// of this kernel): the kernel's blocks stride over the items, so each
// overlaps its next item's loads with the current one's products. 0 when
// the runtime cannot say. Asked per launch: launches are recorded once into
// the stream's graphs.
template <int kDepth>
int resident_blocks(int multiprocessors) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_attention_tc_kernel<kDepth>,
                                                    kTcWarps * 32, tc_shared_bytes<kDepth>()) !=
      cudaSuccess)
    return 0;
  return std::max(0, per_sm * multiprocessors);
}

template <int kDepth>
void launch_tc(__half* out, const __half* qkv, const float* bias, const __half* smolgen, int batch,
               int heads, int warp_size, int multiprocessors, hipStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(kDepth));
  const int items = batch * heads;
  const int resident = resident_blocks<kDepth>(multiprocessors);
  const int grid = resident > 0 ? std::min(items, resident) : items;
  gpu_launch(fused_attention_tc_kernel<kDepth>, grid, kTcWarps * warp_size, tc_shared_bytes<kDepth>(), stream, out,
             qkv, bias, smolgen, items, heads, scale);
  check_launch("fused_attention_tc");
}

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool fused_attention_tensor_cores(__half* out, const __half* qkv, const float* bias,
                                  const __half* smolgen, int batch, int heads, int depth,
                                  const DeviceInfo& device, hipStream_t stream) {
  const int warp_size = device.warp_size;
  check_warp_size(warp_size);
  // The softmax gives each row to a lane pair: 32-lane warps (NVIDIA's) only.
  if (warp_size != 32 || depth % kTile != 0 || !aligned16(out) || !aligned16(qkv) ||
      !aligned16(bias) || (smolgen != nullptr && !aligned16(smolgen)))
    return false;
  if (!device.fast_fp16) return false;  // no tensor cores
  const int sms = device.multiprocessors;
  switch (depth) {
    case 16: launch_tc<16>(out, qkv, bias, smolgen, batch, heads, warp_size, sms, stream); return true;
    case 32: launch_tc<32>(out, qkv, bias, smolgen, batch, heads, warp_size, sms, stream); return true;
    case 48: launch_tc<48>(out, qkv, bias, smolgen, batch, heads, warp_size, sms, stream); return true;
    default: return false;
  }
}

#else  // AMD: no wmma here (see the header comment).

bool fused_attention_tensor_cores(__half*, const __half*, const float*, const __half*, int, int, int,
                                  const DeviceInfo&, hipStream_t) {
  return false;
}

#endif

}  // namespace attn
}  // namespace lc0rocm
