// resnet.cpp - forward pass of convolution-body nets: 3x3 convolutions with
// their SE units and residual adds (conv3x3.h), the residual tower in one
// launch (kernels/resnet_tower.hip) or as one Winograd chain where the plan
// (plan/conv_plan.h) takes them, convolution/classical/attention policy,
// value and moves-left heads.
#include "resnet.h"

#include <algorithm>
#include <vector>

#include "conv3x3.h"
#include "kernels/ops.h"

namespace lc0rocm {
namespace {

// The residual tower in one launch (resnet_tower.hip: 64 channels, half,
// NVIDIA sm_80+) runs at every batch size where it fits: on an H100
// (maia-1900 fp16, two rounds in turns with a launch per layer) b1 even,
// b16 +6..10 %, b32 +31..39 %, b64 +28..31 %, b128 +29..34 %, b256 +20 %,
// b384 even, b512 +4..5 % (RESNET_TOWER.md). Where its blocks take two
// positions each, the convolution policy's first layer joins it as its last
// step (plan/conv_plan.cpp says why only there): one convolution fewer.

struct Block {
  Conv3x3 conv1, conv2;
  bool has_se = false;
  SqueezeExcite se;
};

class ResNetBody : public Body {
 public:
  ResNetBody(const NetConfig& config, const WeightStore& ws);
  void forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const override;
  bool uses_side_lane() const override { return true; }  // the value head beside the policy head
  bool uses_dependent_launch(int n) const override {
    return plan_conv(net_, rules_, cfg_.device, cfg_.settings, n).dependent_launch;
  }
  std::string describe(int n) const override;

 private:
  // The residual tower, input convolution included, into flow.
  void tower(ForwardContext& ctx, int n, const void* planes, void* columns, void* flow) const;
  // The same as one Winograd chain; the convolution policy head may continue it.
  void tower_chained(ForwardContext& ctx, int n, const void* planes, void* v, void* m, void* flow,
                     bool hand_on) const;
  void policy_head_chained(ForwardContext& ctx, int n, void* v, void* m, float* policy) const;
  void policy_head(ForwardContext& ctx, int n, const void* flow, float* policy) const;
  void gather_policy(ForwardContext& ctx, int n, const void* planes, float* policy) const;
  // The convolution policy after its first layer ran in the tower kernel.
  void policy_head_second(ForwardContext& ctx, int n, const void* hidden, float* policy) const;
  void* conv_scratch(ForwardContext& ctx, int n) const;
  void value_head(ForwardContext& ctx, int n, const void* flow, float* wdl) const;
  void moves_left_head(ForwardContext& ctx, int n, const void* flow, float* moves_left) const;

  NetConfig cfg_;
  DType dt_;
  Activation act_;
  int channels_ = 0;
  Conv3x3 input_;
  std::vector<Block> blocks_;
  Conv3x3 policy_conv1_, policy_conv_;  // convolution policy
  Dense policy_, policy_ip_;            // classical policy
  DeviceBuffer policy_gather_;
  std::unique_ptr<PolicyHead> attention_policy_;
  Dense value_, value_ip1_, value_ip2_;
  Dense mlh_, mlh_ip1_, mlh_ip2_;
  std::vector<const Conv3x3*> convs_;  // all of them, to size the im2col scratch
  ConvNet net_;                // the shapes the plan reads
  BodyRules rules_;            // the plan's rules for every batch size
  ResnetTower tower_shape_;    // the one-launch tower's launch facts, where it runs
  DeviceBuffer tower_blocks_;  // ResidualBlockWeights [blocks_.size()] for it
};

ResNetBody::ResNetBody(const NetConfig& config, const WeightStore& ws)
    : cfg_(config), dt_(config.dtype), act_(config.default_act) {
  input_ = Conv3x3(ws, "resnet.input", cfg_, kInputPlanes);
  channels_ = input_.out();
  const int c = channels_;
  // Worth keeping the tower kernel's weight layout for (its own checks follow).
  const bool tower_candidate = resnet_tower_candidate(cfg_.device, cfg_.settings, dt_ == DType::F16, c);
  for (int i = 0;; ++i) {
    std::string p = "resnet.block." + std::to_string(i);
    if (!ws.has(p + ".conv1.w")) break;
    Block b;
    const int se_hidden = ws.has(p + ".se1.w") ? static_cast<int>(ws.count(p + ".se1.b")) : 0;
    b.conv1 = Conv3x3(ws, p + ".conv1", cfg_, c, tower_candidate);
    b.conv2 = Conv3x3(ws, p + ".conv2", cfg_, c, tower_candidate, se_hidden);
    if (b.conv1.out() != c || b.conv2.out() != c)
      fail(LC0ROCM_INVALID_ARGUMENT, p + ": filters differ from the body's " + std::to_string(c));
    b.has_se = ws.has(p + ".se1.w");
    if (b.has_se) {
      b.se.fc1 = load_dense(ws, p + ".se1", dt_, 1, c);
      b.se.fc2 = load_dense(ws, p + ".se2", dt_, 1, b.se.fc1.out);
      if (b.se.fc2.out != 2 * c) fail(LC0ROCM_INVALID_ARGUMENT, p + ".se2 must have 2 x filters outputs");
    }
    blocks_.push_back(std::move(b));
  }

  switch (cfg_.policy) {
    case 2: {  // POLICY_CONVOLUTION
      policy_conv1_ = Conv3x3(ws, "resnet.policy1", cfg_, c, tower_candidate);
      policy_conv_ = Conv3x3(ws, "resnet.policy", cfg_, policy_conv1_.out());
      policy_gather_ = ws.upload_i32("resnet.policy.gather", kPolicyOutputs);
      for (int32_t idx : ws.ints("resnet.policy.gather"))
        if (idx < 0 || idx >= kSquares * policy_conv_.out())
          fail(LC0ROCM_INVALID_ARGUMENT, "resnet.policy.gather index out of range");
      break;
    }
    case 1:  // POLICY_CLASSICAL
      policy_ = load_dense(ws, "resnet.policy", dt_, 1, c);
      policy_ip_ = load_dense(ws, "resnet.policy_ip", dt_, 1, kSquares * policy_.out);
      if (policy_ip_.out != kPolicyOutputs)
        fail(LC0ROCM_INVALID_ARGUMENT, "resnet.policy_ip must have 1858 outputs");
      break;
    case 3:  // POLICY_ATTENTION: SELU embedding on a convolution body
      attention_policy_ = find_policy_head("attention")(cfg_, ws, "policy_head.", c, Activation::Selu);
      break;
    default:
      fail(LC0ROCM_UNSUPPORTED, "convolution body: unsupported policy format " + std::to_string(cfg_.policy));
  }

  value_ = load_dense(ws, "resnet.value", dt_, 1, c);
  value_ip1_ = load_dense(ws, "resnet.value_ip1", dt_, 1, kSquares * value_.out);
  value_ip2_ = load_dense(ws, "resnet.value_ip2", dt_, 1, value_ip1_.out);
  bool wdl = cfg_.value == 2;
  if (value_ip2_.out != (wdl ? 3 : 1))
    fail(LC0ROCM_INVALID_ARGUMENT, std::string("resnet.value_ip2 must have ") + (wdl ? "3" : "1") + " outputs");

  if (cfg_.moves_left) {
    mlh_ = load_dense(ws, "resnet.mlh", dt_, 1, c);
    mlh_ip1_ = load_dense(ws, "resnet.mlh_ip1", dt_, 1, kSquares * mlh_.out);
    mlh_ip2_ = load_dense(ws, "resnet.mlh_ip2", dt_, 1, mlh_ip1_.out);
    if (mlh_ip2_.out != 1) fail(LC0ROCM_INVALID_ARGUMENT, "resnet.mlh_ip2 must have 1 output");
  }

  net_.half = dt_ == DType::F16;
  net_.channels = c;
  net_.input = ConvShape{input_.in(), c, 0};
  int max_se_hidden = 0;
  for (const Block& b : blocks_) {
    net_.tower.push_back(ConvShape{c, c, 0});
    net_.tower.push_back(ConvShape{c, c, b.conv2.se_hidden()});
    max_se_hidden = std::max(max_se_hidden, b.conv2.se_hidden());
  }
  net_.conv_policy = cfg_.policy == 2;
  if (net_.conv_policy) {
    net_.policy1 = ConvShape{c, policy_conv1_.out(), 0};
    net_.policy = ConvShape{policy_conv1_.out(), policy_conv_.out(), 0};
  }
  net_.value_inputs = value_ip2_.in;
  net_.value_outputs = value_ip2_.out;
  const TowerFacts facts = tower_candidate ? resnet_tower_prepare(config.device, static_cast<int>(blocks_.size()),
                                                                  max_se_hidden, &tower_shape_)
                                           : TowerFacts{};
  rules_ = body_rules(net_, config.device, cfg_.settings, facts);
  if (rules_.tower) {
    std::vector<ResidualBlockWeights> host(blocks_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const Block& b = blocks_[i];
      host[i].conv1_w = b.conv1.transposed_weights();
      host[i].conv1_b = b.conv1.bias();
      host[i].conv2_w = b.conv2.transposed_weights();
      host[i].conv2_b = b.conv2.bias();
      host[i].se = Conv3x3::se_weights_of(b.has_se ? &b.se : nullptr);
    }
    tower_blocks_ = DeviceBuffer(sizeof(ResidualBlockWeights) * host.size());
    GPU_CHECK(hipMemcpy(tower_blocks_.get(), host.data(), tower_blocks_.bytes(), hipMemcpyHostToDevice));
    tower_shape_.layers = tower_blocks_.as<ResidualBlockWeights>();
    if (rules_.tower_head) {
      tower_shape_.head_w = policy_conv1_.transposed_weights();
      tower_shape_.head_b = policy_conv1_.bias();
    }
  }

  convs_.push_back(&input_);
  for (const Block& b : blocks_) {
    convs_.push_back(&b.conv1);
    convs_.push_back(&b.conv2);
  }
  if (cfg_.policy == 2) {
    convs_.push_back(&policy_conv1_);
    convs_.push_back(&policy_conv_);
  }
}

void ResNetBody::forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  const int c = channels_;
  void* flow = ctx.arena.take(rows * c * es);
  // The value and moves-left heads go on the side lane once the tower is
  // done, beside the policy head.
  auto heads_beside = [&] {
    ForwardContext side = fork_side(ctx);
    value_head(side, n, flow, out.wdl);
    if (cfg_.moves_left) moves_left_head(side, n, flow, out.moves_left);
  };
  const ConvPlan plan = plan_conv(net_, rules_, ctx.device, cfg_.settings, n);
  if (plan.tower == TowerPath::OneLaunch) {
    input_.forward(ctx, n, planes, conv_scratch(ctx, n), flow, act_);
    // The policy's first layer, where the tower kernel runs it.
    void* hidden = plan.head_in_tower ? ctx.arena.take(rows * policy_conv1_.out() * es) : nullptr;
    resnet_tower(ctx.stream, ctx.device, tower_shape_, plan.layout, n, flow, flow, act_, hidden);
    heads_beside();
    if (hidden) policy_head_second(ctx, n, hidden, out.policy);
    else policy_head(ctx, n, flow, out.policy);
  } else if (plan.tower == TowerPath::WinogradChain) {
    // v: each layer's transformed input, m: its products, for the whole chain.
    const bool policy_chained = plan.policy_chained;
    int widest_in = std::max(input_.in(), c), widest_out = c;
    if (policy_chained) {
      widest_in = std::max(widest_in, policy_conv1_.out());
      widest_out = std::max({widest_out, policy_conv1_.out(), policy_conv_.out()});
    }
    const size_t tile_bytes = static_cast<size_t>(36) * 4 * n * es;
    void* v = ctx.arena.take(tile_bytes * widest_in);
    void* m = ctx.arena.take(tile_bytes * widest_out);
    tower_chained(ctx, n, planes, v, m, flow, policy_chained);
    heads_beside();
    if (policy_chained) policy_head_chained(ctx, n, v, m, out.policy);
    else policy_head(ctx, n, flow, out.policy);
  } else {
    tower(ctx, n, planes, conv_scratch(ctx, n), flow);
    heads_beside();
    policy_head(ctx, n, flow, out.policy);
  }
  join_side(ctx);
}

std::string ResNetBody::describe(int n) const { return describe_conv(net_, rules_, cfg_.device, cfg_.settings, n); }

// Scratch for the largest convolution's im2col or Winograd buffers.
void* ResNetBody::conv_scratch(ForwardContext& ctx, int n) const {
  size_t bytes = 0;
  for (const Conv3x3* conv : convs_) bytes = std::max(bytes, conv->columns_bytes(n));
  return bytes ? ctx.arena.take(bytes) : nullptr;
}

void ResNetBody::tower(ForwardContext& ctx, int n, const void* planes, void* columns, void* flow) const {
  void* mid = ctx.arena.take(static_cast<size_t>(n) * kSquares * channels_ * dtype_size(dt_));
  input_.forward(ctx, n, planes, columns, flow, act_);
  // flow = act(SE(conv2(act(conv1(flow) + b1)) + b2) + flow)
  for (const Block& b : blocks_)
    forward_two(ctx, n, b.conv1, b.conv2, flow, columns, mid, flow, act_, act_, flow, b.has_se ? &b.se : nullptr);
}

// v holds each layer's transformed input, m its products: the output
// transform of one layer writes the next one's v (the GEMM that read v has
// run by then). Only the block outputs reach flow (the residuals and the
// heads' input); the first convolution of a block writes no output at all.
// hand_on: the tower's output also goes on into v, transformed.
void ResNetBody::tower_chained(ForwardContext& ctx, int n, const void* planes, void* v, void* m, void* flow,
                               bool hand_on) const {
  input_.winograd_transform_input(ctx, n, planes, v);
  input_.winograd_product(ctx, n, v, m);
  input_.winograd_output_next(ctx, n, m, flow, blocks_.empty() && !hand_on ? nullptr : v, act_);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    b.conv1.winograd_product(ctx, n, v, m);
    b.conv1.winograd_output_next(ctx, n, m, nullptr, v, act_);
    b.conv2.winograd_product(ctx, n, v, m);
    const bool last = i + 1 == blocks_.size();
    b.conv2.winograd_output_next(ctx, n, m, flow, last && !hand_on ? nullptr : v, act_, flow,
                                 b.has_se ? &b.se : nullptr);
  }
}

// The convolution policy continuing the chain: v holds the tower's output,
// transformed; only the policy planes the gather reads reach device memory.
void ResNetBody::policy_head_chained(ForwardContext& ctx, int n, void* v, void* m, float* policy) const {
  void* planes = ctx.arena.take(static_cast<size_t>(n) * kSquares * policy_conv_.out() * dtype_size(dt_));
  policy_conv1_.winograd_product(ctx, n, v, m);
  policy_conv1_.winograd_output_next(ctx, n, m, nullptr, v, act_);
  policy_conv_.winograd_product(ctx, n, v, m);
  policy_conv_.winograd_output_next(ctx, n, m, planes, nullptr, Activation::None);
  gather_policy(ctx, n, planes, policy);
}

// The convolution policy's 1858 outputs from its planes [n][64][out].
void ResNetBody::gather_policy(ForwardContext& ctx, int n, const void* planes, float* policy) const {
  policy_gather(ctx.stream, dt_, n, static_cast<long long>(kSquares) * policy_conv_.out(), planes,
                policy_gather_.as<int32_t>(), policy);
}

// The convolution policy from its first layer's output (hidden).
void ResNetBody::policy_head_second(ForwardContext& ctx, int n, const void* hidden, float* policy) const {
  void* planes = ctx.arena.take(static_cast<size_t>(n) * kSquares * policy_conv_.out() * dtype_size(dt_));
  policy_conv_.forward(ctx, n, hidden, conv_scratch(ctx, n), planes, Activation::None);
  gather_policy(ctx, n, planes, policy);
}

void ResNetBody::policy_head(ForwardContext& ctx, int n, const void* flow, float* policy) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  if (attention_policy_) {
    attention_policy_->forward(ctx, n, flow, policy);
  } else if (cfg_.policy == 2) {
    void* hidden = ctx.arena.take(rows * policy_conv1_.out() * es);
    void* planes = ctx.arena.take(rows * policy_conv_.out() * es);
    void* scratch = conv_scratch(ctx, n);
    forward_two(ctx, n, policy_conv1_, policy_conv_, flow, scratch, hidden, planes, act_, Activation::None);
    gather_policy(ctx, n, planes, policy);
  } else {
    void* planes = ctx.arena.take(rows * policy_.out * es);
    void* logits = ctx.arena.take(static_cast<size_t>(n) * kPolicyOutputs * es);
    dense_forward(ctx, rows, policy_, flow, planes, act_);
    dense_forward(ctx, n, policy_ip_, planes, logits, Activation::None);
    cast_to_float(ctx.stream, dt_, static_cast<long long>(n) * kPolicyOutputs, logits, policy,
                  Activation::None);
  }
}

void ResNetBody::value_head(ForwardContext& ctx, int n, const void* flow, float* wdl) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  void* planes = ctx.arena.take(rows * value_.out * es);
  void* hidden = ctx.arena.take(static_cast<size_t>(n) * value_ip1_.out * es);
  dense_forward(ctx, rows, value_, flow, planes, act_);
  dense_forward(ctx, n, value_ip1_, planes, hidden, act_);
  if (rules_.value_tail && value_head_tail(ctx.stream, dt_, n, value_ip2_.in, value_ip2_.out, hidden,
                                     value_ip2_.w.get(), /*w_by_output=*/false, value_ip2_.b.as<float>(), wdl))
    return;
  void* logits = ctx.arena.take(static_cast<size_t>(n) * value_ip2_.out * es);
  dense_forward(ctx, n, value_ip2_, hidden, logits, Activation::None);
  value_output(ctx.stream, dt_, n, logits, cfg_.value == 2, wdl);
}

void ResNetBody::moves_left_head(ForwardContext& ctx, int n, const void* flow, float* moves_left) const {
  const size_t es = dtype_size(dt_);
  const long long rows = static_cast<long long>(n) * kSquares;
  void* planes = ctx.arena.take(rows * mlh_.out * es);
  void* hidden = ctx.arena.take(static_cast<size_t>(n) * mlh_ip1_.out * es);
  void* result = ctx.arena.take(static_cast<size_t>(n) * es);
  dense_forward(ctx, rows, mlh_, flow, planes, act_);
  dense_forward(ctx, n, mlh_ip1_, planes, hidden, act_);
  dense_forward(ctx, n, mlh_ip2_, hidden, result, Activation::None);
  cast_to_float(ctx.stream, dt_, n, result, moves_left, Activation::Relu);
}

BodyRegistrar register_resnet("resnet", &make_resnet_body);

}  // namespace

std::unique_ptr<Body> make_resnet_body(const NetConfig& config, const WeightStore& weights) {
  return std::make_unique<ResNetBody>(config, weights);
}

}  // namespace lc0rocm
