// conv3x3.h - the layers of convolution bodies: dense (1x1) layers and 3x3
// convolutions with their epilogue y = act(SE(conv(x) + b) + residual).
//
// A Conv3x3 runs the implementation plan/conv_plan.h picks per batch size n:
//   implicit - kernels/conv3x3_implicit.hip, in half on NVIDIA sm_80+ below
//            batch 32: the convolution as an implicit GEMM on tensor cores
//            with its epilogue, one launch (native/docs/CONV3X3_IMPLICIT.md).
//   Winograd - F(4x4, 3x3) transforms around 36 GEMMs (native/docs/WINOGRAD.md):
//            in float always, in half from batch 16 where the implicit
//            kernel does not run (from 32 where it does).
//   im2col - elsewhere (AMD half below batch 16): im2col + one GEMM
//            (hipBLAS / cuBLAS), then the epilogue: bias + residual +
//            activation in one launch. An MIOpen convolution would slot in
//            here on AMD, behind the same forward().
// With an SE unit, the product then goes through kernels/se_fused.hip
// (bias, SE, residual, activation in one launch) up to 64 channels, where
// it was measured faster, else 7 launches (pool, two dense layers,
// se_apply).
// The backend options disable= / force= (fused_se, winograd, implicit_conv)
// keep each off or take it at every width or batch size, to compare.
#pragma once
#include <string>

#include "body.h"
#include "kernels/ops.h"
#include "plan/conv_plan.h"

namespace lc0rocm {

// A weight matrix [in][out] in the storage type plus a float32 bias.
struct Dense {
  DeviceBuffer w, b;
  int in = 0, out = 0;
};

// taps = 9 for a 3x3 convolution, 1 for 1x1 and dense layers.
Dense load_dense(const WeightStore& ws, const std::string& name, DType dt, int taps,
                 int expected_in = -1);
// y [rows][out] = act(x [rows][in] . W + b)
void dense_forward(ForwardContext& ctx, long long rows, const Dense& l, const void* x, void* y,
                   Activation act);

// SE unit after a block's second convolution: fc1 [C][H], fc2 [H][2C].
struct SqueezeExcite {
  Dense fc1, fc2;
};

// A layer's bias and activation left for the next layer to apply as it
// reads the raw product (Conv3x3::forward_deferred).
struct PendingEpilogue {
  const float* bias = nullptr;
  Activation act = Activation::None;
};

class Conv3x3 {
 public:
  Conv3x3() = default;
  // name.w [9 * in][out] (row tap * in + c), name.b [out], in cfg's
  // storage type, planned for cfg's device and settings. keep_transposed:
  // keep the [out][9 * in] copy of the weights (the implicit kernel's) even
  // where that kernel does not run, for resnet_tower (kernels/ops.h).
  // se_hidden: the SE unit after it (0: none).
  Conv3x3(const WeightStore& ws, const std::string& name, const NetConfig& cfg, int expected_in = -1,
          bool keep_transposed = false, int se_hidden = 0);

  int in() const { return in_; }
  int out() const { return out_; }
  // Scratch forward() needs in `columns` for n positions (0 for the implicit kernel).
  size_t columns_bytes(int n) const;
  int se_hidden() const { return se_hidden_; }
  // Whether a call on n positions runs Winograd F(4x4, 3x3).
  bool uses_winograd(int n) const { return conv_kernel(rules_, n) == ConvKernel::Winograd; }
  // Whether it runs the implicit-GEMM tensor-core kernel (conv3x3_implicit.hip).
  bool uses_implicit(int n) const { return conv_kernel(rules_, n) == ConvKernel::Implicit; }
  // The weights [out][9 * in] (column tap * in + c) in the storage type;
  // null unless the implicit kernel runs or keep_transposed was asked.
  const void* transposed_weights() const { return implicit_w_.get(); }
  const float* bias() const { return b_.as<float>(); }
  // A SqueezeExcite's weights as the fused kernels take them (none: se null).
  static SeWeights se_weights_of(const SqueezeExcite* se);

  // y [n][64][out] = act(SE(conv(x) + b) + residual); x [n][64][in].
  // residual and se may be null; residual may alias y, x may not.
  // x_pending: x is the raw product of a forward_deferred layer, finished
  // here on the way into the im2col columns (only when im2col runs at n).
  void forward(ForwardContext& ctx, int n, const void* x, void* columns, void* y, Activation act,
               const void* residual = nullptr, const SqueezeExcite* se = nullptr,
               const PendingEpilogue* x_pending = nullptr) const;

  // At n positions: im2col + GEMM, whose input can carry a pending epilogue.
  bool uses_im2col(int n) const { return conv_kernel(rules_, n) == ConvKernel::Im2col; }
  // y = conv(x) only, the bias and activation returned for the next layer
  // (one launch fewer: its im2col applies them). Only when uses_im2col(n),
  // and only for a y that nothing but that next layer reads.
  PendingEpilogue forward_deferred(ForwardContext& ctx, int n, const void* x, void* columns, void* y,
                                   Activation act) const;

  // Winograd towers (resnet.cpp, where the plan chains them): a layer whose
  // input comes already transformed from the layer before and whose output
  // goes on transformed to the next (winograd_output_input.hip), so no
  // activation between two of them makes a round trip through device memory
  // for its transforms.
  // v [36][4n][in]: x's input transform (the tower's first layer).
  void winograd_transform_input(ForwardContext& ctx, int n, const void* x, void* v) const;
  // m [36][4n][out] = v_t . U_t for the 36 t, one strided-batched GEMM.
  void winograd_product(ForwardContext& ctx, int n, const void* v, void* m) const;
  // After winograd_product: y = act(SE(A^T m A + b) + residual) and, when
  // v_next is given, y's input transform for the next layer. y, residual
  // and se may be null; residual may alias y.
  void winograd_output_next(ForwardContext& ctx, int n, const void* m, void* y, void* v_next, Activation act,
                            const void* residual = nullptr, const SqueezeExcite* se = nullptr) const;

 private:
  // product = conv(x) by im2col + GEMM, x finished on the way when pending.
  void im2col_product(ForwardContext& ctx, int n, const void* x, void* columns, void* product,
                      const PendingEpilogue& x_pending) const;
  // After the product: bias + SE (+ residual) + activation into y.
  void se_epilogue(ForwardContext& ctx, int n, void* product, const float* bias, const SqueezeExcite* se,
                   const SeWeights& se_weights, const void* residual, void* y, Activation act) const;

  DType dt_ = DType::F32;
  int in_ = 0, out_ = 0, se_hidden_ = 0;
  ConvRules rules_;  // which kernels it runs at which batch sizes (plan/conv_plan.h)
  DeviceBuffer w_, b_;       // w_ [9 * in][out]: im2col weights, empty when Winograd always runs
  DeviceBuffer winograd_w_;  // U [36][in][out] = G g G^T per (in, out)
  DeviceBuffer implicit_w_;  // [out][9 * in]: w_ transposed, for conv3x3_implicit
};

// y = act2(SE(second(mid) + b2) + residual) with mid = act1(first(x) + b1)
// [n][64][first.out()]; where both run im2col at n, mid stays first's raw
// product and second's im2col finishes it (one launch fewer). columns is
// shared scratch (or null); residual may alias y.
void forward_two(ForwardContext& ctx, int n, const Conv3x3& first, const Conv3x3& second, const void* x,
                 void* columns, void* mid, void* y, Activation first_act, Activation second_act,
                 const void* residual = nullptr, const SqueezeExcite* se = nullptr);

}  // namespace lc0rocm
