// attention/body.cpp - the attention body: input embedding, encoder stack,
// heads, run per pass as plan/attention_plan.h plans it (attention.h has the
// tensors and numerics).
#include <algorithm>
#include <cmath>

#include "../attention.h"
#include "../attention_kernels.h"
#include "../kernels/ops.h"
#include "heads.h"

namespace lc0rocm {
namespace attention {
namespace {

constexpr int kPolicyAttention = 3;   // NetworkFormat.POLICY_ATTENTION
constexpr int kValueWdl = 2;          // NetworkFormat.VALUE_WDL
constexpr int kEmbeddingPeDense = 2;  // NetworkFormat.INPUT_EMBEDDING_PE_DENSE
constexpr int kPeDensePlanes = 12;    // PE_DENSE preprocesses the 12 piece planes

class AttentionBody final : public Body {
 public:
  AttentionBody(const NetConfig& cfg, const WeightStore& ws) : cfg_(cfg) {
    const DType dt = cfg.dtype;
    if (cfg.policy != kPolicyAttention)
      fail(LC0ROCM_UNSUPPORTED, "attention body with policy format " + std::to_string(cfg.policy) +
                                    " (lc0 needs POLICY_ATTENTION)");
    if (ws.has("residual.0.conv1.weights") || ws.has("resnet.block.0.conv1.w"))
      fail(LC0ROCM_UNSUPPORTED, "attention bodies with residual blocks are not supported");
    pe_dense_ = cfg.input_embedding == kEmbeddingPeDense;
    int input_width = kInputPlanes + attn::kPosEncodingChannels;
    if (pe_dense_) {
      preproc_ = load_dense(ws, dt, "ip_emb_preproc_w", "ip_emb_preproc_b", kSquares * kPeDensePlanes);
      if (preproc_.out % kSquares)
        fail(LC0ROCM_INVALID_ARGUMENT, "attention net: ip_emb_preproc has " + std::to_string(preproc_.out) +
                                           " outputs, not a multiple of 64");
      pre_size_ = preproc_.out / kSquares;
      input_width = kInputPlanes + pre_size_;
    }
    embed_ = load_dense(ws, dt, "ip_emb_w", "ip_emb_b", input_width);
    const int e = embedding_ = embed_.out;
    has_gating_ = ws.has("ip_mult_gate") && ws.has("ip_add_gate");
    if (has_gating_) {
      // lc0 stores them [C][64]; the kernel reads [64][C] (coalesced).
      mult_gate_ = ws.upload_values(square_major(ws.floats("ip_mult_gate", 64LL * e), e), DType::F32);
      add_gate_ = ws.upload_values(square_major(ws.floats("ip_add_gate", 64LL * e), e), DType::F32);
    }
    if (ws.has("smolgen_w")) {
      const size_t count = ws.count("smolgen_w");
      if (count % 4096)
        fail(LC0ROCM_INVALID_ARGUMENT, "attention net: smolgen_w has " + std::to_string(count) +
                                           " weights, not a multiple of 64 x 64");
      smolgen_global_ = load_dense(ws, dt, "smolgen_w", "", static_cast<int>(count / 4096));
    }
    const Dense* global = ws.has("smolgen_w") ? &smolgen_global_ : nullptr;
    encoders_ = EncoderStack(ws, dt, "encoder.", e, load_count(ws, "", "headcount"), global);
    EncoderConstants& c = encoders_.constants();
    c.alpha = encoders_.empty() ? 1.0f : static_cast<float>(std::pow(2.0 * encoders_.size(), -0.25));
    c.eps = pe_dense_ ? kEpsPeDense : kEpsDefault;
    c.smolgen_act = cfg.smolgen_act;
    c.ffn_act = cfg.ffn_act;
    if (pe_dense_) {
      embed_ln_ = load_norm(ws, "ip_emb_ln_", e);
      embed_ffn_ = load_ffn(ws, dt, "ip_emb_ffn.", "ip_emb_ffn_ln_", e);
    }
    policy_ = std::make_unique<AttentionPolicy>(cfg, ws, "policy_head.", e, cfg.default_act, cfg.smolgen_act,
                                                cfg.ffn_act, global);
    value_.load(ws, dt, "value_head.ip_val", "value_head.ip1_val", "value_head.ip2_val", e);
    const int value_outputs = cfg.value == kValueWdl ? 3 : 1;
    if (value_.dense2.out != value_outputs)
      fail(LC0ROCM_INVALID_ARGUMENT, "attention net: value_head.ip2_val has " + std::to_string(value_.dense2.out) +
                                         " outputs, expected " + std::to_string(value_outputs));
    if (cfg.moves_left) {
      moves_left_.load(ws, dt, "ip_mov", "ip1_mov", "ip2_mov", e);
      if (moves_left_.dense2.out != 1)
        fail(LC0ROCM_INVALID_ARGUMENT, "attention net: ip2_mov has " + std::to_string(moves_left_.dense2.out) +
                                           " outputs, expected 1");
    }
    plan_and_route(global);
  }

  void forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const override {
    if (n == 0) return;
    const AttentionPlan plan =
        plan_attention(net_, rules_, ctx.device, n, ctx.side != nullptr && gpu_stream_capturing(ctx.stream));
    Pass pass{ctx, rules_};
    if (ctx.dtype == DType::F32) run<float>(pass, plan, n, static_cast<const float*>(planes), out);
    else run<half>(pass, plan, n, static_cast<const half*>(planes), out);
  }

  bool uses_side_lane() const override { return rules_.side_lane; }
  bool uses_dependent_launch(int n) const override {
    return plan_attention(net_, rules_, cfg_.device, n, true).dependent_launch;
  }
  std::string describe(int n) const override { return describe_attention(net_, rules_, cfg_.device, n); }

 private:
  // The net's description for the plan, its rules, and its dense layers'
  // routes and tf32 splits by them.
  void plan_and_route(const Dense* global) {
    net_.half = cfg_.dtype == DType::F16;
    net_.pe_dense = pe_dense_;
    net_.embedding = embedding_;
    net_.encoders = encoders_.shapes();
    net_.smolgen_outputs = global ? global->out : 0;
    net_.embedding_ffn1 = embed_ffn_.dense1.shape();
    net_.embedding_ffn2 = embed_ffn_.dense2.shape();
    policy_->describe_into(net_);
    rules_ = attention_rules(net_, cfg_.device, cfg_.settings, prepare_sm90_kernels(cfg_, !encoders_.empty()));
    value_tail_ = !cfg_.settings.off(LC0ROCM_PATH_VALUE_TAIL);
    Tf32Splitter splitter;
    for (Dense* d : {&preproc_, &embed_, &smolgen_global_}) d->route = dense_route(rules_, d->shape(), DenseRole::Other);
    if (pe_dense_) {
      embed_ffn_.dense1.route = dense_route(rules_, embed_ffn_.dense1.shape(), DenseRole::Sm90Product);
      embed_ffn_.dense2.route = dense_route(rules_, embed_ffn_.dense2.shape(), DenseRole::NormProduct);
      splitter.split(preproc_, 1);
      splitter.split(embed_ffn_.dense1, kSquares);
      splitter.split(embed_ffn_.dense2, kSquares);
    }
    splitter.split(embed_, kSquares);
    encoders_.route(rules_, true, splitter);
    if (global && !encoders_.empty()) splitter.split(smolgen_global_, net_.encoders.front().heads);
    value_.route(rules_, splitter);
    if (cfg_.moves_left) moves_left_.route(rules_, splitter);
    tf32_floats_per_position_ = splitter.floats_per_position();
    policy_->route(rules_);
  }

  template <typename T>
  void run(Pass& pass, const AttentionPlan& plan, int n, const T* planes, NetOutputs out) const {
    ForwardContext& ctx = pass.ctx;
    reserve_tf32_scratch(ctx, tf32_floats_per_position_, n);
    const long long rows = static_cast<long long>(n) * kSquares;
    T* flow = ctx.arena.take<T>(rows * embedding_);
    // Launch 0 on the exchange: the embedding's FFN; 1 on: the encoders'.
    void* exchange = take_norm_exchange(ctx, plan.norm_exchange);
    embed<T>(pass, n, planes, flow, exchange);
    encoders_.eval<T>(pass, plan.encoders, n, flow, exchange, 1);
    // All on one stream: the value head on the side lane, beside the policy
    // head, measured -1..-6 % on t82 and bt4 at batches 1-64 (H100), and so
    // did smolgen beside Q|K|V (-1..-3 % at 16-256); SIDE_LANE.md.
    policy_->eval(pass, plan.policy_encoders, n, flow, out.policy);
    value_.run_value<T>(pass, n, flow, cfg_.default_act, cfg_.value == kValueWdl, value_tail_, out.wdl);
    if (cfg_.moves_left) {
      const T* m = moves_left_.run<T>(pass, n, flow, cfg_.default_act);
      cast_to_float(ctx.stream, ctx.dtype, n, m, out.moves_left, Activation::Relu);
    }
  }

  // Input planes [n][64][112] -> flow [n*64][embedding]; norm_exchange:
  // the pass's (launch 0 is the FFN's).
  template <typename T>
  void embed(Pass& pass, int n, const T* planes, T* flow, void* norm_exchange) const {
    ForwardContext& ctx = pass.ctx;
    const long long rows = static_cast<long long>(n) * kSquares;
    hipStream_t stream = ctx.stream;
    T* input = ctx.arena.take<T>(rows * embed_.in);
    if (pe_dense_) {
      // Before the FFN, the embedding goes to its own buffer: the FFN's
      // fused product and layer norm read it as the residual and write flow.
      T* embedded = ctx.arena.take<T>(rows * embedding_);
      T* pieces = ctx.arena.take<T>(rows * kPeDensePlanes);
      T* pre = ctx.arena.take<T>(static_cast<long long>(n) * preproc_.out);
      attn::pe_dense_pieces<T>(pieces, planes, n, stream);
      run_dense(pass, preproc_, n, pieces, pre);
      attn::pe_dense_input<T>(input, planes, pre, preproc_.bias(), n, pre_size_, stream);
      run_dense(pass, embed_, rows, input, embedded);
      attn::layer_norm<T>(embedded, embedded, embed_.bias(), nullptr, embed_ln_.gammas.as<float>(),
                          embed_ln_.betas.as<float>(), rows, embedding_, 1.0f, kEpsHead, cfg_.default_act,
                          ctx.device.warp_size, stream);
      if (has_gating_)
        attn::input_gating<T>(embedded, nullptr, Activation::None, mult_gate_.as<float>(), add_gate_.as<float>(), n,
                              embedding_, stream);
      T* hidden = ctx.arena.take<T>(rows * embed_ffn_.dense1.out);
      const bool fused_norm =
          takes_sm90_norm(rules_, embed_ffn_.dense2.route, embed_ffn_.dense2.shape(), static_cast<long long>(rows));
      run_ffn<T>(pass, embed_ffn_, encoders_.constants().alpha, kEpsHead, cfg_.ffn_act, rows, embedded, hidden, flow,
                 nullptr, fused_norm, norm_exchange, 0);
    } else if (has_gating_) {
      // The product's bias and activation go to the gating's pass.
      attn::pe_map_input<T>(input, planes, n, stream);
      run_dense(pass, embed_, rows, input, flow);
      attn::input_gating<T>(flow, embed_.bias(), cfg_.default_act, mult_gate_.as<float>(), add_gate_.as<float>(), n,
                            embedding_, stream);
    } else {
      attn::pe_map_input<T>(input, planes, n, stream);
      run_dense_act(pass, embed_, rows, input, flow, cfg_.default_act);
    }
  }

  NetConfig cfg_;
  bool pe_dense_ = false, has_gating_ = false;
  int pre_size_ = 0, embedding_ = 0;
  Dense preproc_, embed_, smolgen_global_;
  Norm embed_ln_;
  Ffn embed_ffn_;  // PE_DENSE only
  DeviceBuffer mult_gate_, add_gate_;
  EncoderStack encoders_;
  std::unique_ptr<AttentionPolicy> policy_;
  FlatHead value_, moves_left_;
  bool value_tail_ = true;
  size_t tf32_floats_per_position_ = 0;  // Tf32Splitter's
  AttentionNet net_;
  AttentionRules rules_;
};

std::unique_ptr<Body> make_body(const NetConfig& config, const WeightStore& weights) {
  return std::make_unique<AttentionBody>(config, weights);
}

const BodyRegistrar body_registrar("attention", &make_body);

}  // namespace
}  // namespace attention

std::unique_ptr<Body> make_attention_body(const NetConfig& config, const WeightStore& weights) {
  return attention::make_body(config, weights);
}

}  // namespace lc0rocm
