// Attention policy head output in lc0's 1858 order (float).
// A plain move (knight promotions included) takes its scaled from-to logit.
// A q/r/b promotion from file f to file g takes the scaled logit of the
// from-to pair (48+f, 56+g) plus key_{56+g} . (ppo_piece + ppo_knight), an
// offset that is not scaled. gather[i] is the slot of policy index i in the
// 64*64 + 8*24 block ([from file][to file * 3 + piece] past 4096).
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

// One block of kThreads per position. Every load a thread needs is issued
// before any result is used (unrolled fixed-count loops), so a block waits
// for about two memory round trips instead of one per step: the first
// version (one thread per offset walking d serially, then a strided gather
// loop) took ~36 us per call at any batch on an H100.
constexpr int kPolicyThreads = 256;
constexpr int kPolicyIters = (kPolicySize + kPolicyThreads - 1) / kPolicyThreads;
constexpr int kPolicyDepthPerPass = 4 * kPolicyThreads;   // d values in flight per thread: 4

// A promotion's slot past the 64*64 from-to block, decoded.
struct PromotionSlot {
  int from_file, to_file, piece;   // piece: 0 queen, 1 rook, 2 bishop
};
__device__ __forceinline__ PromotionSlot promotion_slot(int slot) {
  const int p = slot - 64 * 64;
  return {p / 24, (p % 24) / 3, p % 3};
}

template <typename T>
__global__ void __launch_bounds__(kPolicyThreads)
attention_policy_output_kernel(float* out, const T* qk, const T* keys, int key_stride, const float* ppo,
                               const int32_t* gather, int d) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  __shared__ float partials[kPolicyThreads / 32][32];   // [warp][piece * 8 + file]; warps >= 32 wide
  __shared__ float offsets[4][8];                        // [piece q r b n][to file]
  const long long n = blockIdx.x;
  const int tid = threadIdx.x;
  const int lanes = warpSize;
  const int warp = tid / lanes, lane = tid % lanes;

  // The 32 offsets key_{56+file} . ppo_piece: each thread sums its slice of
  // d for all of them, then warp sums, then the warps' partials.
  float acc[4][8];
#pragma unroll
  for (int piece = 0; piece < 4; ++piece)
#pragma unroll
    for (int file = 0; file < 8; ++file) acc[piece][file] = 0.0f;
  const long long key_base = (n * 64 + 56) * key_stride;
  for (int chunk = 0; chunk < d; chunk += kPolicyDepthPerPass) {
#pragma unroll
    for (int it = 0; it < kPolicyDepthPerPass / kPolicyThreads; ++it) {
      const int i = chunk + tid + it * kPolicyThreads;
      if (i < d) {
        float k[8], w[4];
#pragma unroll
        for (int file = 0; file < 8; ++file) k[file] = load_f(keys, key_base + file * key_stride + i);
#pragma unroll
        for (int piece = 0; piece < 4; ++piece) w[piece] = ppo[piece * d + i];
#pragma unroll
        for (int piece = 0; piece < 4; ++piece)
#pragma unroll
          for (int file = 0; file < 8; ++file) acc[piece][file] += k[file] * w[piece];
      }
    }
  }
#pragma unroll
  for (int piece = 0; piece < 4; ++piece)
#pragma unroll
    for (int file = 0; file < 8; ++file) {
      const float s = warp_sum(acc[piece][file]);
      if (lane == 0) partials[warp][piece * 8 + file] = s;
    }

  // The output phase's loads do not need the offsets: issued before waiting for them.
  const long long qk_base = n * 64 * 64;
  int slot[kPolicyIters];
  float v[kPolicyIters];
#pragma unroll
  for (int it = 0; it < kPolicyIters; ++it) {
    const int i = tid + it * kPolicyThreads;
    slot[it] = i < kPolicySize ? gather[i] : 0;
  }
#pragma unroll
  for (int it = 0; it < kPolicyIters; ++it) {
    const PromotionSlot promo = promotion_slot(slot[it]);
    v[it] = slot[it] < 64 * 64 ? load_f(qk, qk_base + slot[it])
                               : load_f(qk, qk_base + (48 + promo.from_file) * 64 + 56 + promo.to_file);
  }
  __syncthreads();
  if (tid < 32) {
    float total = 0.0f;
    for (int w = 0; w < static_cast<int>(blockDim.x) / lanes; ++w) total += partials[w][tid];
    offsets[tid / 8][tid % 8] = total;
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < kPolicyIters; ++it) {
    const int i = tid + it * kPolicyThreads;
    if (i >= kPolicySize) continue;
    float value = v[it];
    if (slot[it] >= 64 * 64) {
      const PromotionSlot promo = promotion_slot(slot[it]);
      value += offsets[promo.piece][promo.to_file] + offsets[3][promo.to_file];
    }
    out[n * kPolicySize + i] = value;
  }
}

template <typename T>
void attention_policy_output(float* out, const T* qk, const T* keys, int key_stride, const float* ppo,
                             const int32_t* gather, int batch, int d, hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(attention_policy_output_kernel<T>, batch, kPolicyThreads, 0, stream, out, qk, keys, key_stride, ppo,
             gather, d);
  check_launch("attention_policy_output");
}

template void attention_policy_output<float>(float*, const float*, const float*, int, const float*,
                                             const int32_t*, int, int, hipStream_t);
template void attention_policy_output<__half>(float*, const __half*, const __half*, int,
                                              const float*, const int32_t*, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
