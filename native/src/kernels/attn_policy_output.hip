// Attention policy head output in lc0's 1858 order (float).
// A plain move (knight promotions included) takes its scaled from-to logit.
// A q/r/b promotion from file f to file g takes the scaled logit of the
// from-to pair (48+f, 56+g) plus key_{56+g} . (ppo_piece + ppo_knight), an
// offset that is not scaled. gather[i] is the slot of policy index i in the
// 64*64 + 8*24 block ([from file][to file * 3 + piece] past 4096).
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void attention_policy_output_kernel(float* out, const T* qk, const T* keys,
                                               int key_stride, const float* ppo, const int32_t* gather, int d) {
  __shared__ float offsets[4][8];  // [piece q r b n][to file]
  const long long n = blockIdx.x;
  const int tid = threadIdx.x;
  if (tid < 32) {
    const int piece = tid / 8, file = tid % 8;
    const long long key_row = (n * 64 + 56 + file) * key_stride;
    float s = 0.0f;
    for (int i = 0; i < d; ++i) s += load_f(keys, key_row + i) * ppo[piece * d + i];
    offsets[piece][file] = s;
  }
  __syncthreads();

  const long long qk_base = n * 64 * 64;
  for (int i = tid; i < kPolicySize; i += blockDim.x) {
    const int slot = gather[i];
    float v;
    if (slot < 64 * 64) {
      v = load_f(qk, qk_base + slot);
    } else {
      const int p = slot - 64 * 64;
      const int from_file = p / 24, to_file = (p % 24) / 3, piece = p % 3;
      v = load_f(qk, qk_base + (48 + from_file) * 64 + 56 + to_file) +
          offsets[piece][to_file] + offsets[3][to_file];
    }
    out[n * kPolicySize + i] = v;
  }
}

template <typename T>
void attention_policy_output(float* out, const T* qk, const T* keys, int key_stride, const float* ppo,
                             const int32_t* gather, int batch, int d, hipStream_t stream) {
  if (batch == 0) return;
  attention_policy_output_kernel<T><<<batch, 256, 0, stream>>>(out, qk, keys, key_stride, ppo,
                                                                    gather, d);
  check_launch("attention_policy_output");
}

template void attention_policy_output<float>(float*, const float*, const float*, int, const float*,
                                             const int32_t*, int, int, hipStream_t);
template void attention_policy_output<__half>(float*, const __half*, const __half*, int,
                                              const float*, const int32_t*, int, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
