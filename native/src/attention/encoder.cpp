// attention/encoder.cpp - encoder layers with smolgen, run as their plan
// says (plan/attention_plan.h).
#include "encoder.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "../attention_kernels.h"
#include "../kernels/ops.h"

namespace lc0rocm {
namespace attention {

Ffn load_ffn(const WeightStore& ws, DType dt, const std::string& weights, const std::string& norm, int embedding) {
  Ffn f;
  f.dense1 = load_dense(ws, dt, weights + "dense1_w", weights + "dense1_b", embedding);
  f.dense2 = load_dense(ws, dt, weights + "dense2_w", weights + "dense2_b", f.dense1.out);
  f.ln = load_norm(ws, norm, embedding);
  return f;
}

EncoderLayer::EncoderLayer(const WeightStore& ws, DType dt, const std::string& p, int embedding, int heads,
                           int smolgen_gen_width) {
  embedding_ = embedding;
  heads_ = heads;
  d_model_ = static_cast<int>(ws.count(p + "mha.q_b"));
  if (heads <= 0 || d_model_ == 0 || d_model_ % heads)
    fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + p + "mha: d_model " + std::to_string(d_model_) +
                                       " does not split over " + std::to_string(heads) + " heads");
  depth_ = d_model_ / heads;
  const long long qkv_count = static_cast<long long>(d_model_) * embedding;
  // One GEMM computes q, k and v: stack their weights and biases. In half
  // nets smolgen's compress weights follow (the product may compute both).
  std::vector<FloatSpan> w = {ws.span(p + "mha.q_w", qkv_count), ws.span(p + "mha.k_w", qkv_count),
                              ws.span(p + "mha.v_w", qkv_count)};
  const std::string s = p + "mha.smolgen.";
  has_smolgen_ = ws.has(s + "compress");
  if (has_smolgen_ && dt == DType::F16) {
    // Only where Q|K|V's and compress's columns are multiples of 8 halves:
    // the product's rows, Q|K|V's and the channels then stay 16-byte
    // aligned, which the tensor-core attention and copy_rows need.
    const size_t compress = ws.count(s + "compress");
    const int channels = static_cast<int>(compress / embedding);
    if (compress % embedding == 0 && channels > 0 && channels % 8 == 0 && d_model_ % 8 == 0) {
      w.push_back(ws.span(s + "compress", static_cast<long long>(compress)));
      qkv_with_compress_ = 3 * d_model_ + channels;
    }
  }
  qkv_.in = embedding;
  qkv_.out = 3 * d_model_;
  qkv_.w = ws.upload_values(w, dt);
  qkv_.b = ws.upload_values({ws.span(p + "mha.q_b"), ws.span(p + "mha.k_b", d_model_), ws.span(p + "mha.v_b", d_model_)},
                            DType::F32);
  out_ = load_dense(ws, dt, p + "mha.dense_w", p + "mha.dense_b", d_model_);
  ffn_ = load_ffn(ws, dt, p + "ffn.", p + "ln2_", embedding);
  if (out_.out != embedding || ffn_.dense2.out != embedding)
    fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + p + ": output width differs from embedding " +
                                       std::to_string(embedding));
  ln1_ = load_norm(ws, p + "ln1_", embedding);

  if (has_smolgen_) {
    Smolgen& g = smolgen_;
    if (smolgen_gen_width <= 0)
      fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + s + ": smolgen weights but no global smolgen_w");
    g.compress = load_dense(ws, dt, s + "compress", "", embedding);
    g.hidden_channels = g.compress.out;
    g.dense1 = load_dense(ws, dt, s + "dense1_w", s + "dense1_b", kSquares * g.hidden_channels);
    g.dense2 = load_dense(ws, dt, s + "dense2_w", s + "dense2_b", g.dense1.out);
    g.ln1 = load_norm(ws, s + "ln1_", g.dense1.out);
    g.ln2 = load_norm(ws, s + "ln2_", g.dense2.out);
    if (g.dense2.out % heads)
      fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + s + "dense2: " + std::to_string(g.dense2.out) +
                                         " outputs do not split over " + std::to_string(heads) + " heads");
    g.gen = g.dense2.out / heads;
    if (g.gen != smolgen_gen_width)
      fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + s + ": " + std::to_string(g.gen) +
                                         " generator inputs per head, smolgen_w takes " +
                                         std::to_string(smolgen_gen_width));
  }
  shape_ = shape();
}

EncoderShape EncoderLayer::shape() const {
  EncoderShape e;
  e.heads = heads_;
  e.depth = depth_;
  e.embedding = embedding_;
  e.out = out_.shape();
  e.ffn1 = ffn_.dense1.shape();
  e.ffn2 = ffn_.dense2.shape();
  e.smolgen = has_smolgen_;
  e.gen = smolgen_.gen;
  e.qkv_with_compress = qkv_with_compress_;
  return e;
}

void EncoderLayer::route(const AttentionRules& rules, bool body, Tf32Splitter& splitter) {
  ffn_.dense1.route = dense_route(rules, ffn_.dense1.shape(), body ? DenseRole::Sm90Product : DenseRole::Other);
  out_.route = dense_route(rules, out_.shape(), body ? DenseRole::NormProduct : DenseRole::Other);
  ffn_.dense2.route = dense_route(rules, ffn_.dense2.shape(), body ? DenseRole::NormProduct : DenseRole::Other);
  qkv_.route = dense_route(rules, qkv_.shape(), DenseRole::Other);
  for (Dense* d : {&qkv_, &out_, &ffn_.dense1, &ffn_.dense2}) splitter.split(*d, kSquares);
  if (has_smolgen_) {
    for (Dense* d : {&smolgen_.compress, &smolgen_.dense1, &smolgen_.dense2})
      d->route = dense_route(rules, d->shape(), DenseRole::Other);
    splitter.split(smolgen_.compress, kSquares);
    splitter.split(smolgen_.dense1, 1);
    splitter.split(smolgen_.dense2, 1);
  }
}

int EncoderLayer::scratch_width() const { return std::max({3 * d_model_, qkv_with_compress_, ffn_.dense1.out}); }

// Smolgen's per-position attention logit offsets, [n*H][64 query][64 key],
// into s.smolgen; reads x and writes only smolgen's own scratch.
// x_split: ctx's tf32 scratch holds x split (run_dense).
template <typename T>
void EncoderLayer::run_smolgen(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n, const T* x,
                               const EncoderScratch<T>& s, bool x_split) const {
  const long long rows = static_cast<long long>(n) * kSquares;
  run_dense(pass, smolgen_.compress, rows, x, s.sg_small, x_split);  // [n][64*hc]
  run_smolgen_from_compressed<T>(pass, c, plan, n, s);
}

// Smolgen's chain from its compressed channels in s.sg_small ([n][64*hc])
// to the logit offsets in s.smolgen.
template <typename T>
void EncoderLayer::run_smolgen_from_compressed(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n,
                                               const EncoderScratch<T>& s) const {
  ForwardContext& ctx = pass.ctx;
  const Smolgen& g = smolgen_;
  run_dense(pass, g.dense1, n, s.sg_small, s.sg_small2);  // [n][hidden]
  attn::layer_norm<T>(s.sg_small2, s.sg_small2, g.dense1.bias(), nullptr, g.ln1.gammas.as<float>(),
                      g.ln1.betas.as<float>(), n, g.dense1.out, 1.0f, kEpsHead, c.smolgen_act, ctx.device.warp_size,
                      ctx.stream);
  if constexpr (std::is_same<T, half>::value) {
    if (plan.generate) {
      const Dense& global = *c.smolgen_global;
      run_dense_act(pass, g.dense2, n, s.sg_small2, s.sg_small, c.smolgen_act);  // [n][H*gen]
      if (!attn::smolgen_generate(ctx.stream, ctx.device, n, heads_, g.gen, s.sg_small, g.ln2.gammas.as<float>(),
                                  g.ln2.betas.as<float>(), kEpsHead, global.w.as<half>(), global.out, s.smolgen))
        fail(LC0ROCM_INTERNAL_ERROR, "smolgen_generate: buffers not aligned as planned");
      return;
    }
  }
  run_dense(pass, g.dense2, n, s.sg_small2, s.sg_small);  // [n][H*gen]
  attn::layer_norm<T>(s.sg_small, s.sg_small, g.dense2.bias(), nullptr, g.ln2.gammas.as<float>(),
                      g.ln2.betas.as<float>(), n, g.dense2.out, 1.0f, kEpsHead, c.smolgen_act, ctx.device.warp_size,
                      ctx.stream, pass.rules.wide_norm_rows);
  run_dense(pass, *c.smolgen_global, static_cast<long long>(n) * heads_, s.sg_small, s.smolgen);
}

namespace {

// Attention of heads too deep for the fused kernel: split heads (bias added),
// Q.K^T and softmax . V as strided batched GEMMs over (position, head),
// softmax with smolgen's logits in between, heads merged into s.merged.
template <typename T>
void run_attention_unfused(ForwardContext& ctx, const Dense& qkv, int heads, int depth, bool smolgen, int n,
                           const EncoderScratch<T>& s) {
  const int batch_heads = n * heads;
  hipStream_t stream = ctx.stream;
  attn::split_heads<T>(s.q, s.k, s.v, s.qkv, qkv.bias(), n, heads, depth, stream);
  const long long head_stride = 64LL * depth;
  // scores = Q . K^T / sqrt(depth), one 64x64 product per (position, head).
  ctx.blas.gemm_strided_batched(ctx.dtype, false, true, 64, 64, depth, s.q, depth, head_stride, s.k, depth,
                                head_stride, s.scores, 64, 4096, batch_heads,
                                1.0f / std::sqrt(static_cast<float>(depth)));
  attn::softmax64<T>(s.scores, s.scores, smolgen ? s.smolgen : nullptr, batch_heads * 64, ctx.device.warp_size,
                     stream);
  // softmax . V into q's buffer (q is no longer needed).
  ctx.blas.gemm_strided_batched(ctx.dtype, false, false, 64, depth, 64, s.scores, 64, 4096, s.v, depth, head_stride,
                                s.q, depth, head_stride, batch_heads);
  attn::merge_heads<T>(s.merged, s.q, n, heads, depth, stream);
}

// The fused attention on matrix cores as `kernel` (half); false where it
// refuses its operands (the caller runs the scalar kernel).
bool run_matrix_attention(AttentionKernel kernel, half* out, const half* qkv, int qkv_stride, const float* bias,
                          const half* gen, int n, int heads, int depth, const DeviceInfo& device, hipStream_t stream) {
  switch (kernel) {
    case AttentionKernel::Mma:
      return attn::fused_attention_mma(out, qkv, qkv_stride, bias, gen, n, heads, depth, device, stream);
    case AttentionKernel::Wmma:
      return attn::fused_attention_wmma(out, qkv, qkv_stride, bias, gen, n, heads, depth, device, stream);
    case AttentionKernel::Mfma:
    case AttentionKernel::RdnaWmma:
      return attn::fused_attention_amd(out, qkv, qkv_stride, bias, gen, n, heads, depth, device, stream);
    default: return false;
  }
}
bool run_matrix_attention(AttentionKernel, float*, const float*, int, const float*, const float*, int, int, int,
                          const DeviceInfo&, hipStream_t) {
  return false;
}

}  // namespace

// The attention of Q|K|V in s.qkv (rows qkv_stride wide) into s.merged, on
// the kernel the plan chose (the fused one on matrix cores falls back to
// the scalar kernel where it refuses its operands).
template <typename T>
void EncoderLayer::attend(Pass& pass, const EncoderPlan& plan, int n, int qkv_stride,
                          const EncoderScratch<T>& s) const {
  ForwardContext& ctx = pass.ctx;
  // The one launch with Q|K|V refused its operands: the attention as if it had not been planned.
  const AttentionKernel kernel = plan.attention == AttentionKernel::QkvSm90
                                     ? fused_attention_kernel(pass.rules, ctx.device, shape_)
                                     : plan.attention;
  if (kernel == AttentionKernel::Unfused) {
    run_attention_unfused<T>(ctx, qkv_, heads_, depth_, has_smolgen_, n, s);
    return;
  }
  const T* gen = has_smolgen_ ? s.smolgen : nullptr;
  if (run_matrix_attention(kernel, s.merged, s.qkv, qkv_stride, qkv_.bias(), gen, n, heads_, depth_, ctx.device,
                           ctx.stream))
    return;
  attn::fused_attention<T>(s.merged, s.qkv, qkv_stride, qkv_.bias(), gen, n, heads_, depth_, ctx.device.warp_size,
                           ctx.stream);
}

template <typename T>
void EncoderLayer::eval(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n, T* x,
                        const EncoderScratch<T>& s, int launch) const {
  ForwardContext& ctx = pass.ctx;
  const long long rows = static_cast<long long>(n) * kSquares;
  int qkv_stride = 3 * d_model_;
  bool attended = false;  // the attention's output is in s.merged
  switch (plan.order) {
    case QkvOrder::OneLaunch:
      // Smolgen's chain first: the one launch reads its logits.
      if (has_smolgen_) run_smolgen<T>(pass, c, plan, n, x, s, false);
      if constexpr (std::is_same<T, half>::value) {
        const int w_rows = qkv_with_compress_ > 0 ? qkv_with_compress_ : 3 * d_model_;
        attended = attn::qkv_attention_sm90(ctx.stream, ctx.device, s.merged, x, qkv_.w.as<half>(), w_rows,
                                            qkv_.bias(), has_smolgen_ ? s.smolgen : nullptr, n, heads_, depth_,
                                            qkv_.in, pass.rules.qkv_half_sums);
      }
      if (!attended) run_dense(pass, qkv_, rows, x, s.qkv);
      break;
    case QkvOrder::Beside: {
      // Two branches that only read x: Q|K|V on the side lane, smolgen here.
      ForwardContext side = fork_side(ctx);
      Pass side_pass{side, pass.rules};
      run_dense(side_pass, qkv_, rows, x, s.qkv);
      run_smolgen<T>(pass, c, plan, n, x, s, false);
      join_side(ctx);
      break;
    }
    case QkvOrder::WithCompress: {
      // Q|K|V and smolgen's compressed channels in one product; the channels
      // gathered into dense1's rows ([n][64 * hc]).
      qkv_stride = qkv_with_compress_;
      const int channels = smolgen_.hidden_channels;
      ctx.blas.gemm(ctx.dtype, false, true, static_cast<int>(rows), qkv_stride, qkv_.in, x, qkv_.in, qkv_.w.get(),
                    qkv_.in, s.qkv, qkv_stride);
      if (!copy_rows(ctx.stream, rows, channels * sizeof(T), s.qkv + 3 * d_model_, qkv_stride * sizeof(T),
                     s.sg_small, channels * sizeof(T)))
        fail(LC0ROCM_INTERNAL_ERROR, "copy_rows: Q|K|V rows not aligned as planned");
      run_smolgen_from_compressed<T>(pass, c, plan, n, s);
      break;
    }
    case QkvOrder::SmolgenFirst:
      run_smolgen<T>(pass, c, plan, n, x, s, false);
      run_dense(pass, qkv_, rows, x, s.qkv);
      break;
    case QkvOrder::QkvFirst: {
      // Q|K|V before smolgen: a float net's split of x then serves smolgen's
      // compress product too (both read x over the embedding width).
      const bool x_split = run_dense(pass, qkv_, rows, x, s.qkv);
      if (has_smolgen_) run_smolgen<T>(pass, c, plan, n, x, s, x_split && smolgen_.compress.in == qkv_.in);
      break;
    }
  }
  if (!attended) attend<T>(pass, plan, n, qkv_stride, s);
  run_dense_norm<T>(pass, out_, ln1_, c.alpha, c.eps, rows, s.merged, x, s.x1, s.branch, plan.out_norm_sm90,
                    s.norm_exchange, launch);
  run_ffn<T>(pass, ffn_, c.alpha, c.eps, c.ffn_act, rows, s.x1, s.qkv, x, s.branch, plan.ffn2_norm_sm90,
             s.norm_exchange, launch + 1);
}

template <typename T>
void run_dense_norm(Pass& pass, const Dense& d, const Norm& norm, float alpha, float eps, long long rows, const T* x,
                    const T* skip, T* y, T* branch, bool fused, void* exchange, int launch) {
  ForwardContext& ctx = pass.ctx;
  if constexpr (std::is_same<T, half>::value) {
    if (fused && exchange != nullptr &&
        gemm_sm90_layer_norm(ctx.stream, ctx.device, rows, d.out, d.in, x, d.w.get(), d.bias(), skip,
                             norm.gammas.as<float>(), norm.betas.as<float>(), alpha, eps, y, exchange, launch,
                             d.route.sm90_half_sums))
      return;
  }
  if (branch == nullptr) branch = ctx.arena.take<T>(rows * d.out);
  run_dense(pass, d, rows, x, branch);
  attn::layer_norm<T>(y, branch, d.bias(), skip, norm.gammas.as<float>(), norm.betas.as<float>(), rows, d.out, alpha,
                      eps, Activation::None, ctx.device.warp_size, ctx.stream);
}

template <typename T>
void run_ffn(Pass& pass, const Ffn& f, float alpha, float eps, Activation act, long long rows, const T* x, T* hidden,
             T* y, T* branch, bool fused_norm, void* exchange, int launch) {
  run_dense_act(pass, f.dense1, rows, x, hidden, act);
  run_dense_norm<T>(pass, f.dense2, f.ln, alpha, eps, rows, hidden, x, y, branch, fused_norm, exchange, launch);
}

void* take_norm_exchange(ForwardContext& ctx, bool needed) {
  if (!needed) return nullptr;
  void* exchange = ctx.arena.take(gemm_sm90_layer_norm_exchange_bytes());
  return gemm_sm90_layer_norm_reset(ctx.stream, exchange) ? exchange : nullptr;
}

// ------------------------------------------------------------------ stack

EncoderStack::EncoderStack(const WeightStore& ws, DType dt, const std::string& prefix, int embedding, int heads,
                           const Dense* smolgen_global) {
  constants_.smolgen_global = smolgen_global;
  const int gen_width = smolgen_global ? smolgen_global->in : 0;
  for (int i = 0; ws.has(prefix + std::to_string(i) + ".mha.q_w"); ++i)
    layers_.emplace_back(ws, dt, prefix + std::to_string(i) + ".", embedding, heads, gen_width);
}

std::vector<EncoderShape> EncoderStack::shapes() const {
  std::vector<EncoderShape> all;
  for (const EncoderLayer& l : layers_) all.push_back(l.shape());
  return all;
}

void EncoderStack::route(const AttentionRules& rules, bool body, Tf32Splitter& splitter) {
  for (EncoderLayer& l : layers_) l.route(rules, body, splitter);
}

template <typename T>
EncoderScratch<T> EncoderStack::take_scratch(Arena& arena, const std::vector<EncoderPlan>& plans, int n) const {
  const long long rows = static_cast<long long>(n) * kSquares;
  long long e = 0, wide = 0, dm = 0, heads = 0, sg1 = 0, sg2 = 0;
  for (const EncoderLayer& l : layers_) {
    e = std::max<long long>(e, l.embedding_);
    wide = std::max<long long>(wide, l.scratch_width());
    dm = std::max<long long>(dm, l.d_model_);
    heads = std::max<long long>(heads, l.heads_);
    if (l.has_smolgen_) {
      const Smolgen& g = l.smolgen_;
      sg1 = std::max<long long>(sg1, std::max<long long>(rows * g.hidden_channels,
                                                         static_cast<long long>(n) * g.dense2.out));
      sg2 = std::max<long long>(sg2, static_cast<long long>(n) * g.dense1.out);
    }
  }
  const bool unfused = std::any_of(plans.begin(), plans.end(),
                                   [](const EncoderPlan& p) { return p.attention == AttentionKernel::Unfused; });
  EncoderScratch<T> s{};
  if (layers_.empty()) return s;
  s.x1 = arena.take<T>(rows * e);
  s.qkv = arena.take<T>(rows * wide);
  s.merged = arena.take<T>(rows * dm);
  s.branch = arena.take<T>(rows * e);
  if (unfused) {
    s.q = arena.take<T>(rows * dm);
    s.k = arena.take<T>(rows * dm);
    s.v = arena.take<T>(rows * dm);
    s.scores = arena.take<T>(n * heads * 4096);
  }
  if (sg1 > 0) {
    s.smolgen = arena.take<T>(n * heads * 4096);
    s.sg_small = arena.take<T>(sg1);
    s.sg_small2 = arena.take<T>(sg2);
  }
  return s;
}

template <typename T>
void EncoderStack::eval(Pass& pass, const std::vector<EncoderPlan>& plans, int n, T* x, void* exchange,
                        int first_launch) const {
  if (layers_.empty()) return;
  EncoderScratch<T> s = take_scratch<T>(pass.ctx.arena, plans, n);
  s.norm_exchange = exchange;
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i].eval<T>(pass, constants_, plans[i], n, x, s, first_launch + 2 * static_cast<int>(i));
}

#define LC0ROCM_ENCODER_INSTANCES(T)                                                                               \
  template void EncoderStack::eval<T>(Pass&, const std::vector<EncoderPlan>&, int, T*, void*, int) const;         \
  template void run_ffn<T>(Pass&, const Ffn&, float, float, Activation, long long, const T*, T*, T*, T*, bool,      \
                           void*, int);
LC0ROCM_FOR_EACH_DTYPE(LC0ROCM_ENCODER_INSTANCES)
#undef LC0ROCM_ENCODER_INSTANCES

}  // namespace attention
}  // namespace lc0rocm
