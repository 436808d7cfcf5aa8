// resnet.cpp - forward pass of convolution-body nets: 3x3 convolutions as
// im2col + one GEMM over all squares of the batch, fused bias/activation,
// SE units, convolution/classical/attention policy, value and moves-left heads.
#include "resnet.h"

#include <vector>

#include "kernels/ops.h"

namespace lc0rocm {
namespace {

// A weight matrix [in][out] in the storage type plus a float32 bias.
struct Linear {
  DeviceBuffer w, b;
  int in = 0, out = 0;
};

// taps = 9 for a 3x3 convolution, 1 for 1x1 and dense layers.
Linear load_linear(const WeightStore& ws, const std::string& name, DType dt, int taps,
                   int expected_in = -1) {
  Linear l;
  size_t outputs = ws.count(name + ".b");
  size_t weights = ws.count(name + ".w");
  if (outputs == 0 || weights % (outputs * taps) != 0)
    fail(LC0ROCM_INVALID_ARGUMENT, name + ".w has " + std::to_string(weights) +
                                       " elements, not a multiple of " + std::to_string(taps) +
                                       " x " + std::to_string(outputs) + " outputs");
  l.out = static_cast<int>(outputs);
  l.in = static_cast<int>(weights / (outputs * taps));
  if (expected_in >= 0 && l.in != expected_in)
    fail(LC0ROCM_INVALID_ARGUMENT, name + " takes " + std::to_string(l.in) + " inputs, expected " +
                                       std::to_string(expected_in));
  l.w = ws.upload(name + ".w", dt);
  l.b = ws.upload_f32(name + ".b");
  return l;
}

struct Block {
  Linear conv1, conv2;
  bool has_se = false;
  Linear se1, se2;
};

class ResNetBody : public Body {
 public:
  ResNetBody(const NetConfig& config, const WeightStore& ws);
  void forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const override;

 private:
  // y [n*64][out] = act(conv3x3(x [n*64][in]) + b (+ residual))
  void conv3(ForwardContext& ctx, int n, const Linear& conv, const void* x, void* columns, void* y,
             Activation act) const;
  // y [rows][out] = act(x [rows][in] . W + b)
  void linear(ForwardContext& ctx, long long rows, const Linear& l, const void* x, void* y,
              Activation act) const;
  void policy_head(ForwardContext& ctx, int n, const void* flow, void* columns, float* policy) const;
  void value_head(ForwardContext& ctx, int n, const void* flow, float* wdl) const;
  void moves_left_head(ForwardContext& ctx, int n, const void* flow, float* moves_left) const;

  NetConfig cfg_;
  DType dt_;
  Activation act_;
  int channels_ = 0;
  Linear input_;
  std::vector<Block> blocks_;
  Linear policy1_, policy_, policy_ip_;
  DeviceBuffer policy_gather_;
  std::unique_ptr<PolicyHead> attention_policy_;
  Linear value_, value_ip1_, value_ip2_;
  Linear mlh_, mlh_ip1_, mlh_ip2_;
  int widest_conv_input_ = 0;
};

ResNetBody::ResNetBody(const NetConfig& config, const WeightStore& ws)
    : cfg_(config), dt_(config.dtype), act_(config.default_act) {
  input_ = load_linear(ws, "resnet.input", dt_, 9, kInputPlanes);
  channels_ = input_.out;
  const int c = channels_;
  widest_conv_input_ = std::max(kInputPlanes, c);
  for (int i = 0;; ++i) {
    std::string p = "resnet.block." + std::to_string(i);
    if (!ws.has(p + ".conv1.w")) break;
    Block b;
    b.conv1 = load_linear(ws, p + ".conv1", dt_, 9, c);
    b.conv2 = load_linear(ws, p + ".conv2", dt_, 9, c);
    if (b.conv1.out != c || b.conv2.out != c)
      fail(LC0ROCM_INVALID_ARGUMENT, p + ": filters differ from the body's " + std::to_string(c));
    b.has_se = ws.has(p + ".se1.w");
    if (b.has_se) {
      b.se1 = load_linear(ws, p + ".se1", dt_, 1, c);
      b.se2 = load_linear(ws, p + ".se2", dt_, 1, b.se1.out);
      if (b.se2.out != 2 * c) fail(LC0ROCM_INVALID_ARGUMENT, p + ".se2 must have 2 x filters outputs");
    }
    blocks_.push_back(std::move(b));
  }

  switch (cfg_.policy) {
    case 2: {  // POLICY_CONVOLUTION
      policy1_ = load_linear(ws, "resnet.policy1", dt_, 9, c);
      policy_ = load_linear(ws, "resnet.policy", dt_, 9, policy1_.out);
      widest_conv_input_ = std::max(widest_conv_input_, policy1_.out);
      policy_gather_ = ws.upload_i32("resnet.policy.gather", kPolicyOutputs);
      for (int32_t idx : ws.ints("resnet.policy.gather"))
        if (idx < 0 || idx >= kSquares * policy_.out)
          fail(LC0ROCM_INVALID_ARGUMENT, "resnet.policy.gather index out of range");
      break;
    }
    case 1:  // POLICY_CLASSICAL
      policy_ = load_linear(ws, "resnet.policy", dt_, 1, c);
      policy_ip_ = load_linear(ws, "resnet.policy_ip", dt_, 1, kSquares * policy_.out);
      if (policy_ip_.out != kPolicyOutputs)
        fail(LC0ROCM_INVALID_ARGUMENT, "resnet.policy_ip must have 1858 outputs");
      break;
    case 3:  // POLICY_ATTENTION: SELU embedding on a convolution body
      attention_policy_ = find_policy_head("attention")(cfg_, ws, "policy_head.", c, Activation::Selu);
      break;
    default:
      fail(LC0ROCM_UNSUPPORTED, "convolution body: unsupported policy format " + std::to_string(cfg_.policy));
  }

  value_ = load_linear(ws, "resnet.value", dt_, 1, c);
  value_ip1_ = load_linear(ws, "resnet.value_ip1", dt_, 1, kSquares * value_.out);
  value_ip2_ = load_linear(ws, "resnet.value_ip2", dt_, 1, value_ip1_.out);
  bool wdl = cfg_.value == 2;
  if (value_ip2_.out != (wdl ? 3 : 1))
    fail(LC0ROCM_INVALID_ARGUMENT, std::string("resnet.value_ip2 must have ") + (wdl ? "3" : "1") + " outputs");

  if (cfg_.moves_left) {
    mlh_ = load_linear(ws, "resnet.mlh", dt_, 1, c);
    mlh_ip1_ = load_linear(ws, "resnet.mlh_ip1", dt_, 1, kSquares * mlh_.out);
    mlh_ip2_ = load_linear(ws, "resnet.mlh_ip2", dt_, 1, mlh_ip1_.out);
    if (mlh_ip2_.out != 1) fail(LC0ROCM_INVALID_ARGUMENT, "resnet.mlh_ip2 must have 1 output");
  }
}

void ResNetBody::linear(ForwardContext& ctx, long long rows, const Linear& l, const void* x, void* y,
                        Activation act) const {
  ctx.blas.gemm(dt_, false, false, static_cast<int>(rows), l.out, l.in, x, l.in, l.w.get(), l.out, y, l.out);
  bias_act(ctx.stream, dt_, rows, l.out, y, l.b.as<float>(), nullptr, y, act);
}

void ResNetBody::conv3(ForwardContext& ctx, int n, const Linear& conv, const void* x, void* columns,
                       void* y, Activation act) const {
  im2col3x3(ctx.stream, dt_, n, conv.in, x, columns);
  long long rows = static_cast<long long>(n) * kSquares;
  ctx.blas.gemm(dt_, false, false, static_cast<int>(rows), conv.out, 9 * conv.in, columns, 9 * conv.in,
                conv.w.get(), conv.out, y, conv.out);
  bias_act(ctx.stream, dt_, rows, conv.out, y, conv.b.as<float>(), nullptr, y, act);
}

void ResNetBody::forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  const int c = channels_;
  void* columns = ctx.arena.take(rows * 9 * widest_conv_input_ * es);
  void* flow = ctx.arena.take(rows * c * es);
  void* mid = ctx.arena.take(rows * c * es);
  void* branch = ctx.arena.take(rows * c * es);

  conv3(ctx, n, input_, planes, columns, flow, act_);
  for (const Block& b : blocks_) {
    conv3(ctx, n, b.conv1, flow, columns, mid, act_);
    if (!b.has_se) {
      // flow = act(conv2(mid) + b + flow), fused into the bias pass.
      im2col3x3(ctx.stream, dt_, n, c, mid, columns);
      ctx.blas.gemm(dt_, false, false, static_cast<int>(rows), c, 9 * c, columns, 9 * c,
                    b.conv2.w.get(), c, branch, c);
      bias_act(ctx.stream, dt_, rows, c, branch, b.conv2.b.as<float>(), flow, flow, act_);
      continue;
    }
    conv3(ctx, n, b.conv2, mid, columns, branch, Activation::None);
    void* pooled = ctx.arena.take(static_cast<size_t>(n) * c * es);
    void* hidden = ctx.arena.take(static_cast<size_t>(n) * b.se1.out * es);
    void* gates = ctx.arena.take(static_cast<size_t>(n) * 2 * c * es);
    global_avg_pool(ctx.stream, dt_, n, c, branch, pooled);
    linear(ctx, n, b.se1, pooled, hidden, act_);
    linear(ctx, n, b.se2, hidden, gates, Activation::None);
    se_apply(ctx.stream, dt_, n, c, branch, gates, flow, flow, act_);
  }

  policy_head(ctx, n, flow, columns, out.policy);
  value_head(ctx, n, flow, out.wdl);
  if (cfg_.moves_left) moves_left_head(ctx, n, flow, out.moves_left);
}

void ResNetBody::policy_head(ForwardContext& ctx, int n, const void* flow, void* columns,
                             float* policy) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  if (attention_policy_) {
    attention_policy_->forward(ctx, n, flow, policy);
  } else if (cfg_.policy == 2) {
    void* hidden = ctx.arena.take(rows * policy1_.out * es);
    void* planes = ctx.arena.take(rows * policy_.out * es);
    conv3(ctx, n, policy1_, flow, columns, hidden, act_);
    conv3(ctx, n, policy_, hidden, columns, planes, Activation::None);
    policy_gather(ctx.stream, dt_, n, static_cast<long long>(kSquares) * policy_.out, planes,
                  policy_gather_.as<int32_t>(), policy);
  } else {
    void* planes = ctx.arena.take(rows * policy_.out * es);
    void* logits = ctx.arena.take(static_cast<size_t>(n) * kPolicyOutputs * es);
    linear(ctx, rows, policy_, flow, planes, act_);
    linear(ctx, n, policy_ip_, planes, logits, Activation::None);
    cast_to_float(ctx.stream, dt_, static_cast<long long>(n) * kPolicyOutputs, logits, policy,
                  Activation::None);
  }
}

void ResNetBody::value_head(ForwardContext& ctx, int n, const void* flow, float* wdl) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  void* planes = ctx.arena.take(rows * value_.out * es);
  void* hidden = ctx.arena.take(static_cast<size_t>(n) * value_ip1_.out * es);
  void* logits = ctx.arena.take(static_cast<size_t>(n) * value_ip2_.out * es);
  linear(ctx, rows, value_, flow, planes, act_);
  linear(ctx, n, value_ip1_, planes, hidden, act_);
  linear(ctx, n, value_ip2_, hidden, logits, Activation::None);
  value_output(ctx.stream, dt_, n, logits, cfg_.value == 2, wdl);
}

void ResNetBody::moves_left_head(ForwardContext& ctx, int n, const void* flow, float* moves_left) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  void* planes = ctx.arena.take(rows * mlh_.out * es);
  void* hidden = ctx.arena.take(static_cast<size_t>(n) * mlh_ip1_.out * es);
  void* result = ctx.arena.take(static_cast<size_t>(n) * es);
  linear(ctx, rows, mlh_, flow, planes, act_);
  linear(ctx, n, mlh_ip1_, planes, hidden, act_);
  linear(ctx, n, mlh_ip2_, hidden, result, Activation::None);
  cast_to_float(ctx.stream, dt_, n, result, moves_left, Activation::Relu);
}

BodyRegistrar register_resnet("resnet", &make_resnet_body);

}  // namespace

std::unique_ptr<Body> make_resnet_body(const NetConfig& config, const WeightStore& weights) {
  return std::make_unique<ResNetBody>(config, weights);
}

}  // namespace lc0rocm
