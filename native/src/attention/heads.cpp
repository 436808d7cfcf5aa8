// attention/heads.cpp - the attention policy head (also borrowed by
// convolution bodies), the flat value and moves-left heads.
#include "heads.h"

#include <cmath>

#include "../attention.h"
#include "../attention_kernels.h"
#include "../kernels/ops.h"

namespace lc0rocm {
namespace attention {

std::vector<int32_t> make_policy_slots() {
  std::vector<int32_t> slots;
  for (int from = 0; from < 64; ++from) {
    for (int to = 0; to < 64; ++to) {
      if (from == to) continue;
      const int dr = std::abs(to / 8 - from / 8), df = std::abs(to % 8 - from % 8);
      const bool queen = dr == 0 || df == 0 || dr == df;
      const bool knight = (dr == 1 && df == 2) || (dr == 2 && df == 1);
      if (queen || knight) slots.push_back(from * 64 + to);
    }
  }
  for (int from_file = 0; from_file < 8; ++from_file)
    for (int to_file = std::max(0, from_file - 1); to_file <= std::min(7, from_file + 1); ++to_file)
      for (int piece = 0; piece < 3; ++piece)  // q, r, b
        slots.push_back(64 * 64 + from_file * 24 + to_file * 3 + piece);
  return slots;
}

// ------------------------------------------------------------------ policy

AttentionPolicy::AttentionPolicy(const NetConfig& cfg, const WeightStore& ws, const std::string& prefix,
                                 int channels, Activation embed_act, Activation smolgen_act, Activation ffn_act,
                                 const Dense* smolgen_global)
    : dtype_(cfg.dtype), embed_act_(embed_act) {
  embed_ = load_dense(ws, dtype_, prefix + "ip_pol_w", prefix + "ip_pol_b", channels);
  const int width = embed_.out;
  encoders_ = EncoderStack(ws, dtype_, prefix + "pol_encoder.", width, load_count(ws, prefix, "pol_headcount"),
                           smolgen_global);
  EncoderConstants& c = encoders_.constants();
  c.alpha = 1.0f;
  c.eps = kEpsDefault;
  c.smolgen_act = smolgen_act;
  c.ffn_act = ffn_act;
  // Query and key in one GEMM: [2d][width] weights, output rows q | k.
  d_ = static_cast<int>(ws.count(prefix + "ip2_pol_b"));
  if (d_ == 0) fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + prefix + "ip2_pol_b is empty");
  const long long count = static_cast<long long>(d_) * width;
  qk_.in = width;
  qk_.out = 2 * d_;
  qk_.w = ws.upload_values({ws.span(prefix + "ip2_pol_w", count), ws.span(prefix + "ip3_pol_w", count)}, dtype_);
  qk_.b = ws.upload_values({ws.span(prefix + "ip2_pol_b"), ws.span(prefix + "ip3_pol_b", d_)}, DType::F32);
  promotion_ = ws.upload_f32(prefix + "ip4_pol_w", 4LL * d_);
  std::vector<int32_t> slots = make_policy_slots();
  if (slots.size() != static_cast<size_t>(attn::kPolicySize))
    fail(LC0ROCM_INTERNAL_ERROR, "attention policy map has " + std::to_string(slots.size()) + " moves");
  // The map native.py sends comes from lc0_rocm.tables; both follow the rules.
  if (ws.has("map.attention_policy_gather") && ws.ints("map.attention_policy_gather", attn::kPolicySize) != slots)
    fail(LC0ROCM_INTERNAL_ERROR, "attention policy map differs from the one generated here");
  slots_ = DeviceBuffer(slots.size() * sizeof(int32_t));
  GPU_CHECK(hipMemcpy(slots_.get(), slots.data(), slots_.bytes(), hipMemcpyHostToDevice));
}

void AttentionPolicy::describe_into(AttentionNet& net) const {
  net.policy_encoders = encoders_.shapes();
  net.policy_embedding = embed_.shape();
  net.policy_query_key = qk_.shape();
}

void AttentionPolicy::route(const AttentionRules& rules) {
  // The embedding's activation and query | key's bias in our sm_90 product's epilogue.
  embed_.route = dense_route(rules, embed_.shape(), DenseRole::Sm90Product);
  qk_.route = dense_route(rules, qk_.shape(), DenseRole::Sm90Product);
  Tf32Splitter splitter;
  splitter.split(embed_, kSquares);
  encoders_.route(rules, false, splitter);
  splitter.split(qk_, kSquares);
  tf32_floats_per_position_ = splitter.floats_per_position();
}

void AttentionPolicy::eval(Pass& pass, const std::vector<EncoderPlan>& plans, int n, const void* x,
                           float* policy) const {
  if (dtype_ == DType::F32) run<float>(pass, plans, n, x, policy);
  else run<half>(pass, plans, n, x, policy);
}

template <typename T>
void AttentionPolicy::run(Pass& pass, const std::vector<EncoderPlan>& plans, int n, const void* x,
                          float* policy) const {
  ForwardContext& ctx = pass.ctx;
  const long long rows = static_cast<long long>(n) * kSquares;
  reserve_tf32_scratch(ctx, tf32_floats_per_position_, n);
  T* flow = ctx.arena.take<T>(rows * embed_.out);
  run_dense_act(pass, embed_, rows, x, flow, embed_act_);
  encoders_.eval<T>(pass, plans, n, flow, nullptr, 0);
  T* qk = ctx.arena.take<T>(rows * 2 * d_);
  run_dense_act(pass, qk_, rows, flow, qk, Activation::None);
  T* logits = ctx.arena.take<T>(static_cast<long long>(n) * 4096);
  const long long stride = 64LL * 2 * d_;
  ctx.blas.gemm_strided_batched(ctx.dtype, false, true, 64, 64, d_, qk, 2 * d_, stride, qk + d_, 2 * d_, stride,
                                logits, 64, 4096, n, 1.0f / std::sqrt(static_cast<float>(d_)));
  attn::attention_policy_output<T>(policy, logits, qk + d_, 2 * d_, promotion_.as<float>(), slots_.as<int32_t>(), n,
                                   d_, ctx.stream);
}

// ------------------------------------------------------------------ value / moves left

void FlatHead::load(const WeightStore& ws, DType dt, const std::string& embed_name, const std::string& d1,
                    const std::string& d2, int channels) {
  embed = load_dense(ws, dt, embed_name + "_w", embed_name + "_b", channels);
  dense1 = load_dense(ws, dt, d1 + "_w", d1 + "_b", kSquares * embed.out);
  dense2 = load_dense(ws, dt, d2 + "_w", d2 + "_b", dense1.out);
}

void FlatHead::route(const AttentionRules& rules, Tf32Splitter& splitter) {
  for (Dense* d : {&embed, &dense1, &dense2}) d->route = dense_route(rules, d->shape(), DenseRole::Other);
  splitter.split(embed, kSquares);
  splitter.split(dense1, 1);
  splitter.split(dense2, 1);
}

// dense1's outputs [n][dense1.out]: dense2's input.
template <typename T>
T* FlatHead::hidden(Pass& pass, int n, const T* flow, Activation act) const {
  const long long rows = static_cast<long long>(n) * kSquares;
  T* e = pass.ctx.arena.take<T>(rows * embed.out);
  run_dense_act(pass, embed, rows, flow, e, act);
  T* h = pass.ctx.arena.take<T>(static_cast<long long>(n) * dense1.out);
  run_dense_act(pass, dense1, n, e, h, act);
  return h;
}

template <typename T>
T* FlatHead::run(Pass& pass, int n, const T* flow, Activation act) const {
  T* out = pass.ctx.arena.take<T>(static_cast<long long>(n) * dense2.out);
  run_dense_act(pass, dense2, n, hidden<T>(pass, n, flow, act), out, Activation::None);
  return out;
}

template <typename T>
void FlatHead::run_value(Pass& pass, int n, const T* flow, Activation act, bool wdl_outputs, bool tail,
                         float* wdl) const {
  ForwardContext& ctx = pass.ctx;
  const T* h = hidden<T>(pass, n, flow, act);
  if (tail && value_head_tail(ctx.stream, ctx.dtype, n, dense2.in, dense2.out, h, dense2.w.get(),
                              /*w_by_output=*/true, dense2.bias(), wdl))
    return;
  T* logits = ctx.arena.take<T>(static_cast<long long>(n) * dense2.out);
  run_dense_act(pass, dense2, n, h, logits, Activation::None);
  value_output(ctx.stream, ctx.dtype, n, logits, wdl_outputs, wdl);
}

#define LC0ROCM_FLAT_HEAD_INSTANCES(T)                                            \
  template T* FlatHead::run<T>(Pass&, int, const T*, Activation) const;           \
  template void FlatHead::run_value<T>(Pass&, int, const T*, Activation, bool, bool, float*) const;
LC0ROCM_FOR_EACH_DTYPE(LC0ROCM_FLAT_HEAD_INSTANCES)
#undef LC0ROCM_FLAT_HEAD_INSTANCES

// ------------------------------------------------------------------ sm_90 kernels

Sm90Facts prepare_sm90_kernels(const NetConfig& cfg, bool body_encoders) {
  Sm90Facts facts;
  if (cfg.dtype != DType::F16) return facts;
  const Settings& s = cfg.settings;
  facts.gemm = !s.off(LC0ROCM_PATH_SM90_GEMM) && gemm_sm90_prepare(cfg.device);
  if (body_encoders) {
    if (!s.off(LC0ROCM_PATH_SM90_LAYER_NORM)) facts.layer_norm_blocks = gemm_sm90_layer_norm_prepare(cfg.device);
    facts.qkv_attention = !s.off(LC0ROCM_PATH_QKV_ATTENTION) && attn::qkv_attention_sm90_prepare(cfg.device);
  }
  return facts;
}

// ------------------------------------------------------------------ borrowed by convolution bodies

namespace {

// The attention policy head of a convolution body (lc0's T79-style nets),
// planned on its own: its encoders use the embedding activation in their
// FFN and no smolgen activation, like the numpy reference.
class BorrowedPolicy final : public PolicyHead {
 public:
  BorrowedPolicy(const NetConfig& cfg, const WeightStore& ws, const std::string& prefix, int channels,
                 Activation act)
      : cfg_(cfg), head_(cfg, ws, prefix, channels, act, Activation::None, act, nullptr) {
    net_.half = cfg.dtype == DType::F16;
    net_.policy_only = true;
    head_.describe_into(net_);
    rules_ = attention_rules(net_, cfg.device, cfg.settings, prepare_sm90_kernels(cfg, false));
    head_.route(rules_);
  }

  void forward(ForwardContext& ctx, int n, const void* x, float* policy) const override {
    const AttentionPlan plan = plan_attention(net_, rules_, ctx.device, n, false);
    Pass pass{ctx, rules_};
    head_.eval(pass, plan.policy_encoders, n, x, policy);
  }

 private:
  NetConfig cfg_;
  AttentionPolicy head_;
  AttentionNet net_;
  AttentionRules rules_;
};

std::unique_ptr<PolicyHead> make_borrowed_policy(const NetConfig& config, const WeightStore& weights,
                                                 const std::string& prefix, int channels, Activation act) {
  return std::make_unique<BorrowedPolicy>(config, weights, prefix, channels, act);
}

const PolicyHeadRegistrar policy_registrar("attention", &make_borrowed_policy);

}  // namespace
}  // namespace attention

std::unique_ptr<PolicyHead> make_attention_policy_head(const NetConfig& config, const WeightStore& weights,
                                                       const std::string& prefix, int channels, Activation act) {
  return attention::make_borrowed_policy(config, weights, prefix, channels, act);
}

std::vector<int32_t> attention_policy_slots() { return attention::make_policy_slots(); }

}  // namespace lc0rocm
