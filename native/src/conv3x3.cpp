// conv3x3.cpp - dense layers and 3x3 convolutions of convolution bodies.
#include "conv3x3.h"

#include <vector>

namespace lc0rocm {

Dense load_dense(const WeightStore& ws, const std::string& name, DType dt, int taps, int expected_in) {
  Dense l;
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

void dense_forward(ForwardContext& ctx, long long rows, const Dense& l, const void* x, void* y,
                   Activation act) {
  ctx.blas.gemm(ctx.dtype, false, false, static_cast<int>(rows), l.out, l.in, x, l.in, l.w.get(), l.out,
                y, l.out);
  bias_act(ctx.stream, ctx.dtype, rows, l.out, y, l.b.as<float>(), nullptr, y, act);
}

namespace {

// U [36][in][out], U_t = (G g G^T)[xi][nu] for t = 6 xi + nu, from the
// library's [9 * in][out] weights (row tap * in + c, tap = 3 ky + kx).
std::vector<float> winograd_weights(const std::vector<float>& w, int in, int out) {
  static const double G[6][3] = {{1.0 / 4, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                 {-1.0 / 6, 1.0 / 6, -1.0 / 6}, {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                 {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};
  std::vector<float> u(static_cast<size_t>(36) * in * out);
  for (int c = 0; c < in; ++c) {
    for (int o = 0; o < out; ++o) {
      double g[3][3];
      for (int tap = 0; tap < 9; ++tap) g[tap / 3][tap % 3] = w[(static_cast<size_t>(tap) * in + c) * out + o];
      for (int xi = 0; xi < 6; ++xi) {
        for (int nu = 0; nu < 6; ++nu) {
          double sum = 0.0;
          for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) sum += G[xi][a] * g[a][b] * G[nu][b];
          u[(static_cast<size_t>(xi * 6 + nu) * in + c) * out + o] = static_cast<float>(sum);
        }
      }
    }
  }
  return u;
}

// m [rows][cols] -> [cols][rows].
std::vector<float> transposed(const std::vector<float>& m, int rows, int cols) {
  std::vector<float> t(m.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) t[static_cast<size_t>(c) * rows + r] = m[static_cast<size_t>(r) * cols + c];
  return t;
}
}  // namespace

Conv3x3::Conv3x3(const WeightStore& ws, const std::string& name, const NetConfig& cfg, int expected_in,
                 bool keep_transposed, int se_hidden)
    : dt_(cfg.dtype), se_hidden_(se_hidden) {
  Dense plain = load_dense(ws, name, dt_, 9, expected_in);
  in_ = plain.in;
  out_ = plain.out;
  rules_ = conv_rules(dt_ == DType::F16, ConvShape{in_, out_, se_hidden}, cfg.device, cfg.settings);
  if (rules_.winograd) winograd_w_ = ws.upload_values(winograd_weights(ws.floats(name + ".w"), in_, out_), dt_);
  if (rules_.implicit || keep_transposed)
    implicit_w_ = ws.upload_values(transposed(ws.floats(name + ".w"), 9 * in_, out_), dt_);
  b_ = std::move(plain.b);
  if (rules_.winograd && rules_.winograd_always) return;  // im2col never runs: U is the only weight copy kept
  w_ = std::move(plain.w);
}

size_t Conv3x3::columns_bytes(int n) const {
  if (uses_implicit(n)) return 0;
  // Winograd: v [36][4n][in] and m [36][4n][out]; im2col: [64n][9 in].
  if (uses_winograd(n)) return static_cast<size_t>(36) * 4 * n * (in_ + out_) * dtype_size(dt_);
  return static_cast<size_t>(n) * kSquares * 9 * in_ * dtype_size(dt_);
}

void Conv3x3::im2col_product(ForwardContext& ctx, int n, const void* x, void* columns, void* product,
                             const PendingEpilogue& x_pending) const {
  if (!columns) columns = ctx.arena.take(columns_bytes(n));
  im2col3x3(ctx.stream, dt_, n, in_, x, columns, x_pending.bias, x_pending.act);
  ctx.blas.gemm(dt_, false, false, n * kSquares, out_, 9 * in_, columns, 9 * in_, w_.get(), out_, product, out_);
}

PendingEpilogue Conv3x3::forward_deferred(ForwardContext& ctx, int n, const void* x, void* columns, void* y,
                                          Activation act) const {
  if (!uses_im2col(n)) fail(LC0ROCM_INTERNAL_ERROR, "deferred epilogue without im2col");
  im2col_product(ctx, n, x, columns, y, PendingEpilogue{});
  return PendingEpilogue{b_.as<float>(), act};
}

void forward_two(ForwardContext& ctx, int n, const Conv3x3& first, const Conv3x3& second, const void* x,
                 void* columns, void* mid, void* y, Activation first_act, Activation second_act,
                 const void* residual, const SqueezeExcite* se) {
  if (first.uses_im2col(n) && second.uses_im2col(n)) {
    const PendingEpilogue pending = first.forward_deferred(ctx, n, x, columns, mid, first_act);
    second.forward(ctx, n, mid, columns, y, second_act, residual, se, &pending);
    return;
  }
  first.forward(ctx, n, x, columns, mid, first_act);
  second.forward(ctx, n, mid, columns, y, second_act, residual, se);
}

void Conv3x3::forward(ForwardContext& ctx, int n, const void* x, void* columns, void* y, Activation act,
                      const void* residual, const SqueezeExcite* se, const PendingEpilogue* x_pending) const {
  const long long rows = static_cast<long long>(n) * kSquares;
  const size_t es = dtype_size(dt_);
  const SeWeights se_weights = se_weights_of(se);
  if (x_pending && !uses_im2col(n)) fail(LC0ROCM_INTERNAL_ERROR, "pending epilogue without im2col");

  if (uses_implicit(n)) {
    // conv(x) in one launch, with the epilogue when no SE unit follows.
    if (!se) {
      conv3x3_implicit(ctx.stream, dt_, n, in_, out_, x, implicit_w_.get(), b_.as<float>(), residual, y, act);
      return;
    }
    void* product = ctx.arena.take(rows * out_ * es);
    conv3x3_implicit(ctx.stream, dt_, n, in_, out_, x, implicit_w_.get(), nullptr, nullptr, product,
                     Activation::None);
    se_epilogue(ctx, n, product, b_.as<float>(), se, se_weights, residual, y, act);
    return;
  }

  if (uses_winograd(n)) {
    // v = B^T d B per tile, m_t = v_t . U_t (36 GEMMs in one call), then
    // y = A^T m A with the epilogue (without an SE unit) or the raw product.
    if (!columns) columns = ctx.arena.take(columns_bytes(n));
    void* v = columns;
    void* m = static_cast<char*>(columns) + static_cast<size_t>(36) * 4 * n * in_ * es;
    winograd_input(ctx.stream, dt_, n, in_, x, v);
    winograd_product(ctx, n, v, m);
    if (!se) {
      winograd_output(ctx.stream, dt_, n, out_, m, b_.as<float>(), residual, y, act);
      return;
    }
    void* product = ctx.arena.take(rows * out_ * es);
    winograd_output(ctx.stream, dt_, n, out_, m, nullptr, nullptr, product, Activation::None);
    se_epilogue(ctx, n, product, b_.as<float>(), se, se_weights, residual, y, act);
    return;
  }

  // product = conv(x). It goes straight to y only when nothing else reads y
  // (the residual may alias it).
  void* product = (residual || se) ? ctx.arena.take(rows * out_ * es) : y;
  im2col_product(ctx, n, x, columns, product, x_pending ? *x_pending : PendingEpilogue{});
  const float* bias = b_.as<float>();
  if (!se) {
    bias_act(ctx.stream, dt_, rows, out_, product, bias, residual, y, act);
    return;
  }
  se_epilogue(ctx, n, product, bias, se, se_weights, residual, y, act);
}

void Conv3x3::se_epilogue(ForwardContext& ctx, int n, void* product, const float* bias, const SqueezeExcite* se,
                          const SeWeights& se_weights, const void* residual, void* y, Activation act) const {
  const long long rows = static_cast<long long>(n) * kSquares;
  const size_t es = dtype_size(dt_);
  if (rules_.fused_se && se->fc1.out == se_hidden_) {  // bias + SE + residual, one launch
    se_fused(ctx.stream, dt_, n, out_, product, bias, se_weights, residual, y, act);
    return;
  }
  // The SE unit in 7 launches (se_apply reads each element's residual before
  // writing y's same element, so they may alias).
  if (bias) bias_act(ctx.stream, dt_, rows, out_, product, bias, nullptr, product, Activation::None);
  void* pooled = ctx.arena.take(static_cast<size_t>(n) * out_ * es);
  void* hidden = ctx.arena.take(static_cast<size_t>(n) * se->fc1.out * es);
  void* gates = ctx.arena.take(static_cast<size_t>(n) * se->fc2.out * es);
  global_avg_pool(ctx.stream, dt_, n, out_, product, pooled);
  dense_forward(ctx, n, se->fc1, pooled, hidden, act);
  dense_forward(ctx, n, se->fc2, hidden, gates, Activation::None);
  se_apply(ctx.stream, dt_, n, out_, product, gates, residual, y, act);
}

SeWeights Conv3x3::se_weights_of(const SqueezeExcite* se) {
  SeWeights w;
  if (se) {
    w.w1 = se->fc1.w.get();
    w.b1 = se->fc1.b.as<float>();
    w.w2 = se->fc2.w.get();
    w.b2 = se->fc2.b.as<float>();
    w.hidden = se->fc1.out;
  }
  return w;
}

void Conv3x3::winograd_transform_input(ForwardContext& ctx, int n, const void* x, void* v) const {
  winograd_input(ctx.stream, dt_, n, in_, x, v);
}

void Conv3x3::winograd_product(ForwardContext& ctx, int n, const void* v, void* m) const {
  const int tiles = 4 * n;
  ctx.blas.gemm_strided_batched(dt_, false, false, tiles, out_, in_, v, in_, static_cast<long long>(tiles) * in_,
                                winograd_w_.get(), out_, static_cast<long long>(in_) * out_, m, out_,
                                static_cast<long long>(tiles) * out_, 36);
}

void Conv3x3::winograd_output_next(ForwardContext& ctx, int n, const void* m, void* y, void* v_next,
                                   Activation act, const void* residual, const SqueezeExcite* se) const {
  const SeWeights weights = se_weights_of(se);
  winograd_output_input(ctx.stream, dt_, n, out_, m, b_.as<float>(), se ? &weights : nullptr, residual, y,
                        v_next, act);
}

}  // namespace lc0rocm
