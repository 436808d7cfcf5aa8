// Kernels of the attention body (one op per file under kernels/attn_*.hip).
//
// Every launcher works on float or half storage (T) and computes in float;
// biases, layer-norm and gating parameters are float32 (as in kernels/ops.h).
// Activations are laid out row-major: [rows][cols], one row per square
// (rows = batch * 64) unless a comment says otherwise; input planes are
// [batch][64][112] square-major (body.h). Every launcher checks
// its launch and throws lc0rocm::Error naming the kernel on failure.
// Row reductions (layer norm, softmax) give one warp to a row and reduce with
// shuffles over the warp width that the caller read from the device
// (DeviceInfo::warp_size: 64 on CDNA, 32 on RDNA and NVIDIA). Elementwise
// kernels give a block to a row, so their index math stays 32-bit.
#pragma once

#include <cstdint>

#include "kernels/activation.h"
#include "plan/device.h"
#include "plan/limits.h"
#include "tensor/dtype.h"
#include "tensor/errors.h"

namespace lc0rocm {
namespace attn {

// Size of lc0's attention policy block: 64x64 from-to logits, then 8x24
// promotion logits [from file][to file * 3 + piece (q, r, b)].
constexpr int kAttnPolicySlots = 64 * 64 + 8 * 24;
constexpr int kPolicySize = 1858;
constexpr int kInputPlanes = 112;
constexpr int kPosEncodingChannels = 64;

inline void check_launch(const char* kernel) {
  hipError_t err = hipGetLastError();
  if (err != hipSuccess) {
    fail(LC0ROCM_DEVICE_ERROR,
         std::string("kernel ") + kernel + " failed to launch: " + hipGetErrorString(err));
  }
}

inline int div_up(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Threads per block of the elementwise kernels (one block per row).
constexpr int kRowThreads = 256;

inline void check_warp_size(int warp_size) {
  if (warp_size != 32 && warp_size != 64)
    fail(LC0ROCM_UNSUPPORTED, "warp size " + std::to_string(warp_size) + " (need 32 or 64)");
}

// out[r] = LN(act(in[r] + bias) * alpha + skip[r]) * gammas + betas, LN over
// cols with epsilon eps. bias and skip may be null; out may alias in or skip.
// wide_from_rows: see limits::kWideNormDefaultRows (0: never).
template <typename T>
void layer_norm(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                const float* betas, int rows, int cols, float alpha, float eps, Activation act,
                int warp_size, hipStream_t stream, int wide_from_rows = limits::kWideNormDefaultRows);

// qkv [batch*64][3*heads*depth] (q | k | v, from one GEMM against the stacked
// weights) plus bias [3*heads*depth] -> q, k, v each [batch][heads][64][depth].
template <typename T>
void split_heads(T* q, T* k, T* v, const T* qkv, const float* bias, int batch, int heads,
                 int depth, hipStream_t stream);

// Whole attention of every (position, head) in one kernel, for heads of
// depth <= kFusedMaxDepth: qkv [batch*64][qkv_stride] (q | k | v in its
// first 3*heads*depth columns, bias not yet added; smolgen's compressed
// channels may follow), bias [3*heads*depth], smolgen [batch][heads][64][64]
// or null -> out [batch*64][heads*depth] = softmax(Q.K^T / sqrt(depth) +
// smolgen) . V.
constexpr int kFusedMaxDepth = limits::kFusedMaxDepth;  // K, V, Q of a head in 48 KB of shared memory
template <typename T>
void fused_attention(T* out, const T* qkv, int qkv_stride, const float* bias, const T* smolgen, int batch,
                     int heads, int depth, int warp_size, hipStream_t stream);

// The same op on NVIDIA's tensor cores (attn_fused_attention_tc.hip): half
// storage, Q, K, V (bias added) and the probabilities rounded to half,
// products accumulated in float; on mma.sync fragments (where
// limits::mma_attention_fits) or wmma tiles (limits::wmma_attention_fits).
// Returns false, launching nothing, where it does not apply (AMD builds,
// other depths, unaligned pointers or rows, a GPU without them); the caller
// then runs fused_attention.
bool fused_attention_mma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                         int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream);
bool fused_attention_wmma(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                          int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream);

// The Q|K|V product and the same op in one launch on sm_90
// (attn_qkv_attention_sm90.hip, native/docs/QKV_ATTENTION_SM90.md): x
// [batch*64][embedding] half, w [w_rows][embedding] half whose first
// 3*heads*depth rows are Q's, K's and V's, bias [3*heads*depth] (Q|K|V's),
// smolgen [batch][heads][64][64] or null -> out [batch*64][heads*depth]; Q,
// K, V rounded to half once (bias added first), the rest as
// fused_attention_mma; half_sums: the product sums in half (wgmma .f16
// accumulators), else in float. The shapes it takes:
// limits::qkv_attention_sm90_fits; _prepare once per device at network
// creation (not in a capture). Returns false, launching nothing, where it
// does not apply (AMD, builds not for sm_90a, other shapes, unaligned
// operands); the caller then runs the product and the attention.
bool qkv_attention_sm90_prepare(const DeviceInfo& device);
bool qkv_attention_sm90(hipStream_t stream, const DeviceInfo& device, __half* out, const __half* x, const __half* w,
                        int w_rows, const float* bias, const __half* smolgen, int batch, int heads, int depth,
                        int embedding, bool half_sums);

// The same op on AMD's matrix instructions (attn_fused_attention_amd.hip):
// CDNA's MFMA (limits::mfma_attention_fits) or RDNA 3's WMMA
// (limits::rdna_attention_fits), 16 x 16 x 16 products of half with float
// sums, 16-byte aligned Q|K|V rows and biases. Returns false, launching
// nothing, elsewhere (NVIDIA builds among them); the caller then runs
// fused_attention.
bool fused_attention_amd(__half* out, const __half* qkv, int qkv_stride, const float* bias, const __half* smolgen,
                         int batch, int heads, int depth, const DeviceInfo& device, hipStream_t stream);

// Smolgen's second layer norm and its shared generator product in one
// launch (attn_smolgen_generate.hip; native/docs/SMOLGEN_GENERATE.md):
//   out [n*heads][outputs] = (LN(v [n][heads*gen]) * gammas + betas) viewed
//                            [n*heads][gen], . w [outputs][gen]^T
// v (dense2's output, bias and activation applied), w, out half; gammas,
// betas float. The shapes it takes: limits::smolgen_generate_fits. false,
// launching nothing, where it does not fit (or the pointers are not
// aligned).
bool smolgen_generate(hipStream_t stream, const DeviceInfo& device, int n, int heads, int gen, const __half* v,
                      const float* gammas, const float* betas, float eps, const __half* w, int outputs,
                      __half* out);

// in [batch][heads][64][depth] -> out [batch*64][heads*depth].
template <typename T>
void merge_heads(T* out, const T* in, int batch, int heads, int depth, hipStream_t stream);

// Row softmax over 64 columns of in (+ add, when add is not null), rows rows.
// out may alias in.
template <typename T>
void softmax64(T* out, const T* in, const T* add, int rows, int warp_size, hipStream_t stream);

// planes [batch][64][112] -> out [batch*64][112 + 64]: the square's 112
// plane values, then lc0's positional encoding for that square (generated from
// the rules: -1 on the square itself, 1 on squares a queen or knight move away).
template <typename T>
void pe_map_input(T* out, const T* planes, int batch, hipStream_t stream);

// planes [batch][64][112] -> out [batch][64*12]: planes 0..11 per square.
template <typename T>
void pe_dense_pieces(T* out, const T* planes, int batch, hipStream_t stream);

// planes [batch][64][112], pre [batch][64*pre_size] (preprocess GEMM output,
// bias not yet added), pre_bias [64*pre_size] -> out [batch*64][112 + pre_size].
template <typename T>
void pe_dense_input(T* out, const T* planes, const T* pre, const float* pre_bias, int batch,
                    int pre_size, hipStream_t stream);

// x [batch*64][C] = act(x + bias) * mult + add, where mult and add are
// stored [64][C] (square-major: lc0's [C][64] transposed); bias [C] may be
// null (the product before added it).
template <typename T>
void input_gating(T* x, const float* bias, Activation act, const float* mult, const float* add, int batch,
                  int channels, hipStream_t stream);

// Attention policy to lc0's 1858 order, float output [batch][1858].
// qk [batch][64][64] holds the scaled logits; keys [batch*64] rows of d key
// values (bias added), key_stride elements apart; ppo [4][d] the promotion weights (q, r, b, n);
// gather [1858] the slot in the 64*64 + 8*24 block of each policy index.
template <typename T>
void attention_policy_output(float* out, const T* qk, const T* keys, int key_stride, const float* ppo,
                             const int32_t* gather, int batch, int d, hipStream_t stream);

}  // namespace attn
}  // namespace lc0rocm
