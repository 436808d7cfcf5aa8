// ops.h - launchers of the general kernels (one op per .hip file in this
// folder). Shared by every body. All take the storage type and run
// asynchronously on `stream`; biases are float32; layouts as in body.h.
// The shapes each kernel takes are plan/limits.h's (the plan chooses by
// them); a launcher that returns false launched nothing.
#pragma once
#include <cstdint>

#include "../plan/conv_plan.h"
#include "../plan/device.h"
#include "../plan/limits.h"
#include "../tensor/dtype.h"
#include "../tensor/errors.h"
#include "activation.h"

namespace lc0rocm {

// expand_planes.hip: packed input -> planes [n][64][112] (square-major).
void expand_planes(hipStream_t stream, DType dt, int n, const uint64_t* masks,
                   const float* values, void* planes);
// expand_planes.hip: full float planes [n][112][64] -> [n][64][112] in dt.
void transpose_planes(hipStream_t stream, DType dt, int n, const float* planes_in, void* planes);

// bias_act.hip: y[r][c] = act(x[r][c] + bias[c] + residual[r][c]).
// bias and residual may be null; y may alias x (in place).
void bias_act(hipStream_t stream, DType dt, long long rows, int channels, const void* x,
              const float* bias, const void* residual, void* y, Activation act);

// copy_rows.hip: dst row r = row_bytes bytes of src row r, rows `stride`
// bytes apart in each. Returns false, launching nothing, unless the row
// bytes, strides and pointers are multiples of 16 (16-byte pieces); the
// caller then copies another way.
bool copy_rows(hipStream_t stream, long long rows, int row_bytes, const void* src, long long src_stride,
               void* dst, long long dst_stride);

// gemv_rows.hip: y [M][N] = act(x [M][K] . w[N][K]^T + bias) in half
// storage (float accumulation, one rounding) for M up to
// limits::kGemvMaxRows (the per-position layers of smolgen and the heads at
// small batches), bias may be null. Returns false where it does not apply
// (limits::gemv_rows_fits, unaligned x or w); the caller then runs its BLAS
// product.
bool gemv_rows(hipStream_t stream, const DeviceInfo& device, int M, int N, int K, const void* x, const void* w,
               const float* bias, Activation act, void* y);

// gemm_sm90.hip: y [M][N] = act(x [M][K] . w[N][K]^T + bias) in half
// storage (float accumulation unless half_sums, one rounding), bias may be
// null, on sm_90's warpgroup products fed by TMA (native/docs/GEMM_SM90.md),
// for the shapes of limits::gemm_sm90_fits. gemm_sm90_prepare once per
// device at network creation (not in a capture): whether it runs there.
// gemm_sm90 returns false, launching nothing, where it does not apply (AMD,
// builds not for sm_90a, other shapes, unaligned operands). Where N is a
// multiple of 256: with half_sums the products sum in half (as lc0's cuda
// backend's cublasHgemm) on the wide ping-pong schedule, else in float on
// the cooperative one; other N: float sums, ping-pong on 128-wide tiles
// (kernels/gemm_sm90.hip's Schedule).
bool gemm_sm90_prepare(const DeviceInfo& device);
bool gemm_sm90(hipStream_t stream, const DeviceInfo& device, long long M, int N, int K, const void* x,
               const void* w, const float* bias, Activation act, void* y, bool half_sums);

// gemm_sm90_layer_norm.hip: y [M][N] = LN(alpha * (x [M][K] . w[N][K]^T +
// bias) + skip) * gammas + betas (eps inside the root), half storage, float
// accumulation (unless half_sums) and statistics, bias may be null: the
// encoder layers' output and FFN second products with their post-LN, in one
// launch on sm_90
// (native/docs/GEMM_SM90.md), for the shapes of
// limits::gemm_sm90_layer_norm_fits. gemm_sm90_layer_norm_prepare once per
// device at network creation (not in a capture): how many of its blocks the
// device runs at once (limits::gemm_sm90_layer_norm_fill reads it), 0 where
// it does not run. The launch's blocks
// exchange row statistics through `exchange`, device memory of
// gemm_sm90_layer_norm_exchange_bytes() (128-byte aligned) that
// gemm_sm90_layer_norm_reset prepared on the stream; launches on that
// stream may then share it one after another (never two streams at once),
// numbered 0, 1, ... by `launch` since the reset (below 2,048). half_sums:
// the products sum in half (as lc0's cuda backend's cublasHgemm), the
// epilogue in float.
// Returns false, launching nothing, where it does not apply (AMD, builds not
// for sm_90a, other shapes, unaligned operands); the caller then runs BLAS +
// layer_norm.
int gemm_sm90_layer_norm_prepare(const DeviceInfo& device);
size_t gemm_sm90_layer_norm_exchange_bytes();
bool gemm_sm90_layer_norm_reset(hipStream_t stream, void* exchange);
bool gemm_sm90_layer_norm(hipStream_t stream, const DeviceInfo& device, long long M, int N, int K, const void* x,
                          const void* w, const float* bias, const void* skip, const float* gammas,
                          const float* betas, float alpha, float eps, void* y, void* exchange, int launch,
                          bool half_sums);

// im2col3x3.hip: x [n][64][C] -> columns [n*64][9*C], column = tap*C + c,
// tap = (dy+1)*3 + (dx+1); zero outside the board. With a bias, x is a raw
// product whose epilogue is still to do: columns get act(x + bias).
void im2col3x3(hipStream_t stream, DType dt, int n, int channels, const void* x, void* columns,
               const float* bias = nullptr, Activation act = Activation::None);

// Both Winograd transforms: below kWinogradSpreadMaxBatch + 1 positions a
// block takes kWinogradGroup (position, tile, channel) items with six
// threads each (more loads in flight); from there on one thread per item
// (H100, maia-1900 fp16: spread +34 % at batch 1, even at 256, -9 % at 512;
// native/docs/WINOGRAD.md).
constexpr int kWinogradGroup = 32;
constexpr int kWinogradSpreadThreads = 6 * kWinogradGroup;
constexpr int kWinogradSpreadMaxBatch = 255;

// winograd_input.hip: x [n][64][C] -> v [36][n * 4][C], each 4x4 output
// tile's 6x6 input window (zero off the board) as B^T d B (F(4x4, 3x3)).
void winograd_input(hipStream_t stream, DType dt, int n, int channels, const void* x, void* v);
// winograd_output.hip: m [36][n * 4][C] (the products V_t . U_t) ->
// y [n][64][C] = act(A^T M A + bias + residual); bias and residual may be
// null, residual may alias y.
void winograd_output(hipStream_t stream, DType dt, int n, int channels, const void* m, const float* bias,
                     const void* residual, void* y, Activation act);

// A squeeze-excitation unit's weights for the fused kernels: w1 [C][hidden],
// w2 [hidden][2C] in the storage type, float biases; the gates are
// y = sigmoid(g[c]) * x + g[C + c]. w1 == nullptr: no SE.
struct SeWeights {
  const void* w1 = nullptr;
  const float* b1 = nullptr;
  const void* w2 = nullptr;
  const float* b2 = nullptr;
  int hidden = 0;
};

// winograd_output_input.hip: for a tower of convolutions that all run
// Winograd, one layer's output transform and epilogue fused with the next
// layer's input transform: z = act(SE(A^T M A + bias) + residual) into y
// [n][64][C] and, transformed, into v_next [36][n * 4][C] (se, residual, y,
// v_next may each be null; residual may alias y). One block of 4C threads per
// position; the shapes of limits::winograd_chain_fits.
void winograd_output_input(hipStream_t stream, DType dt, int n, int channels, const void* m, const float* bias,
                           const SeWeights* se, const void* residual, void* y, void* v_next, Activation act);

// se_fused.hip: y [n][64][C] = act(SE(x + bias) + residual) in one launch
// (bias and residual may be null; residual may alias y, x may not); the
// shapes of limits::se_fused_fits.
void se_fused(hipStream_t stream, DType dt, int n, int channels, const void* x, const float* bias,
              const SeWeights& se, const void* residual, void* y, Activation act);

// conv3x3_implicit.hip: y [n][64][cout] = act(conv3x3(x) + bias + residual)
// in one launch for a few positions (implicit GEMM on tensor cores; bias and
// residual may be null, residual may alias y, x may not). wt [cout][9 * cin]:
// the weights transposed (column tap * cin + c). Half storage on NVIDIA
// sm_80+, the shapes of limits::implicit_conv_fits.
void conv3x3_implicit(hipStream_t stream, DType dt, int n, int cin, int cout, const void* x, const void* wt,
                      const float* bias, const void* residual, void* y, Activation act);

// resnet_tower.hip: a 64-channel residual tower in one launch, x [n][64][64]
// -> y (may alias x): for each block flow = act(SE(conv2(act(conv1(flow) +
// b1)) + b2) + flow), the activations kept in shared memory between
// layers. A tower's blocks: ResidualBlockWeights in device memory (16-byte
// aligned), conv weights in conv3x3_implicit's [64][9 * 64] layout; se.w1
// null: no SE. For nets of limits::resnet_tower_fits, resnet_tower_prepare
// says what runs here (TowerFacts: which layouts the device's shared memory
// holds, how many clusters it runs), fills `tower` (but its layers and
// head) and lets the kernel have its shared memory: once per network,
// outside a graph capture.
struct ResidualBlockWeights {
  const void* conv1_w = nullptr;
  const float* conv1_b = nullptr;
  const void* conv2_w = nullptr;
  const float* conv2_b = nullptr;
  SeWeights se;
};
struct ResnetTower {
  const ResidualBlockWeights* layers = nullptr;  // [blocks], device memory
  int blocks = 0;
  int se_hidden = 0;   // the widest SE unit's hidden width (0: none)
  int cluster_positions = 0;  // a position per cluster takes batches up to this size (0: never)
  // A convolution after the tower, head = act(conv(y) + b) into an output
  // of its own (64 -> 64, the same weight layout): the convolution policy's
  // first layer, where the plan runs it there (two positions per block).
  // Null: none. The caller sets it after resnet_tower_prepare.
  const void* head_w = nullptr;
  const float* head_b = nullptr;
};
TowerFacts resnet_tower_prepare(const DeviceInfo& device, int blocks, int se_hidden, ResnetTower* tower);
// The tower on `layout` (the plan's: plan/conv_plan.h). head_y [n][64][64]
// (16-byte aligned): the head convolution's output, only on two positions
// per block (null: the tower alone).
void resnet_tower(hipStream_t stream, const DeviceInfo& device, const ResnetTower& tower, TowerLayout layout, int n,
                  const void* x, void* y, Activation act, void* head_y = nullptr);

// resnet_tower_cluster.hip: the same tower for small batches, each position
// over a cluster of limits::kTowerClusterBlocks blocks (on as many
// multiprocessors), each block a quarter of every layer's output channels
// (NVIDIA sm_90 on: distributed shared memory). resnet_tower_cluster_prepare
// (called by resnet_tower_prepare, tower's shapes filled in) returns the
// most positions one launch takes at once, 0 where it cannot run here.
int resnet_tower_cluster_prepare(const DeviceInfo& device, const ResnetTower& tower);
void resnet_tower_cluster(hipStream_t stream, const ResnetTower& tower, int n, const void* x, void* y,
                          Activation act);

// global_avg_pool.hip: x [n][64][C] -> mean over squares [n][C].
void global_avg_pool(hipStream_t stream, DType dt, int n, int channels, const void* x, void* out);

// se_apply.hip: y = act(sigmoid(g[n][c]) * x + g[n][C + c] + residual),
// g [n][2C] (after the second SE dense layer, bias included).
void se_apply(hipStream_t stream, DType dt, int n, int channels, const void* x, const void* g,
              const void* residual, void* y, Activation act);

// policy_gather.hip: policy[i][k] = float(x[i][indices[k]]), k < 1858; x rows
// are row_stride elements apart.
void policy_gather(hipStream_t stream, DType dt, int n, long long row_stride, const void* x,
                   const int32_t* indices, float* policy);

// value_output.hip: value logits -> wdl [n][3]: softmax of 3 logits (wdl),
// or ((1+q)/2, 0, (1-q)/2) with q = tanh(logit) for a classical head.
void value_output(hipStream_t stream, DType dt, int n, const void* logits, bool wdl, float* out);

// value_head_tail.hip: wdl [n][3] = value_output(hidden [n][k] . w + b),
// w [k][outs] or, w_by_output, [outs][k] (lc0's dense layout, the
// attention bodies'), outs 3 (WDL) or 1 (classical), the logits kept in
// float, in one launch. Returns false, launching nothing, where it does
// not apply (limits::value_tail_fits, hidden not 16-byte aligned); the
// caller then runs the product and value_output.
bool value_head_tail(hipStream_t stream, DType dt, int n, int k, int outs, const void* hidden, const void* w,
                     bool w_by_output, const float* b, float* out);

// cast.hip: out[i] = act(float(x[i])) for count elements.
void cast_to_float(hipStream_t stream, DType dt, long long count, const void* x, float* out,
                   Activation act);

// tf32_split.hip: x [rows][cols] float -> out [rows][3*cols], each row as
// tf32 heads and float remainders in blocks ordered so that
// a tf32 product of activations by weights, both split, is float-accurate:
// rest | head | head for activations, head | rest | head for weights
// (the small products first: tf32_split.hip says why).
// Returns false, launching nothing, unless cols is a multiple of 4 and both
// pointers are 16-byte aligned.
enum class Tf32SplitOrder { Activations, Weights };
bool tf32_split(hipStream_t stream, long long rows, int cols, const float* x, float* out,
                Tf32SplitOrder order);

}  // namespace lc0rocm
