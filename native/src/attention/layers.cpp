// attention/layers.cpp - dense layers of attention nets: loading, tf32
// splits, and their products on the route the plan gives them.
#include "layers.h"

#include <algorithm>

#include "../kernels/ops.h"

namespace lc0rocm {
namespace attention {

Dense load_dense(const WeightStore& ws, DType dt, const std::string& w_name, const std::string& b_name, int in) {
  Dense d;
  d.in = in;
  if (!ws.has(w_name)) fail(LC0ROCM_INVALID_ARGUMENT, "attention net: missing weight tensor " + w_name);
  const size_t count = ws.count(w_name);
  if (in <= 0 || count == 0 || count % in)
    fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + w_name + " has " + std::to_string(count) +
                                       " weights, not a multiple of its input width " + std::to_string(in));
  d.out = static_cast<int>(count / in);
  if (!b_name.empty()) d.b = ws.upload_f32(b_name, d.out);
  d.w = ws.upload(w_name, dt, count);
  return d;
}

Norm load_norm(const WeightStore& ws, const std::string& prefix, int width) {
  return Norm{ws.upload_f32(prefix + "gammas", width), ws.upload_f32(prefix + "betas", width)};
}

int load_count(const WeightStore& ws, const std::string& prefix, const std::string& name) {
  if (ws.has("meta." + name)) return ws.scalar("meta." + name);
  if (ws.has(prefix + name)) return ws.scalar(prefix + name);
  return 0;
}

std::vector<float> square_major(const std::vector<float>& by_channel, int channels) {
  std::vector<float> out(by_channel.size());
  for (int c = 0; c < channels; ++c)
    for (int sq = 0; sq < kSquares; ++sq) out[sq * channels + c] = by_channel[c * kSquares + sq];
  return out;
}

void Tf32Splitter::split(Dense& d, int rows_per_position) {
  if (!d.route.tf32 || !d.w) return;
  DeviceBuffer w3(3 * d.w.bytes());
  if (!tf32_split(nullptr, d.out, d.in, d.w.as<float>(), w3.as<float>(), Tf32SplitOrder::Weights)) {
    d.route.tf32 = false;
    return;
  }
  GPU_CHECK(hipStreamSynchronize(nullptr));
  d.w3 = std::move(w3);
  floats_per_position_ = std::max(floats_per_position_, size_t(3) * rows_per_position * d.in);
}

void reserve_tf32_scratch(ForwardContext& ctx, size_t floats_per_position, int n) {
  const size_t floats = floats_per_position * static_cast<size_t>(n);
  if (floats == 0 || ctx.tf32_scratch_floats >= floats) return;
  ctx.tf32_scratch = ctx.arena.take<float>(floats);
  ctx.tf32_scratch_floats = floats;
}

namespace {

Product product_of(Pass& pass, const Dense& d, long long rows) {
  const bool room = static_cast<size_t>(3 * rows * d.in) <= pass.ctx.tf32_scratch_floats;
  return product_for(pass.rules, pass.ctx.device, d.route, d.shape(), rows, room);
}

// The product on gemv_rows or gemm_sm90 (bias and activation applied);
// false where it is not planned there or the kernel refuses its operands.
bool run_own_product(Pass& pass, Product p, const Dense& d, long long rows, const void* x, void* y,
                     const float* bias, Activation act) {
  ForwardContext& ctx = pass.ctx;
  if (p == Product::Gemv)
    return gemv_rows(ctx.stream, ctx.device, static_cast<int>(rows), d.out, d.in, x, d.w.get(), bias, act, y);
  if (p == Product::Sm90)
    return gemm_sm90(ctx.stream, ctx.device, rows, d.out, d.in, x, d.w.get(), bias, act, y, d.route.sm90_half_sums);
  return false;
}

// A float product as one tf32 product over 3 * in columns: the input split
// rest | head | head against the weights' head | rest | head
// (kernels/tf32_split.hip). x_split: ctx's scratch already holds x split
// (the product just before took the same x of as many rows and columns).
// false: the caller runs the float product.
bool run_tf32(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y, bool x_split) {
  if (!x_split && !tf32_split(ctx.stream, rows, d.in, static_cast<const float*>(x), ctx.tf32_scratch,
                              Tf32SplitOrder::Activations))
    return false;
  ctx.blas.gemm_tf32(false, true, static_cast<int>(rows), d.out, 3 * d.in, ctx.tf32_scratch, 3 * d.in,
                     d.w3.as<float>(), 3 * d.in, static_cast<float*>(y), d.out);
  return true;
}

}  // namespace

bool run_dense(Pass& pass, const Dense& d, long long rows, const void* x, void* y, bool x_split) {
  ForwardContext& ctx = pass.ctx;
  const Product p = product_of(pass, d, rows);
  if (run_own_product(pass, p, d, rows, x, y, nullptr, Activation::None)) return false;
  if (p == Product::Tf32Split && d.w3 && run_tf32(ctx, d, rows, x, y, x_split)) return true;
  ctx.blas.gemm(ctx.dtype, false, true, static_cast<int>(rows), d.out, d.in, x, d.in, d.w.get(), d.in, y, d.out);
  return false;
}

void run_dense_act(Pass& pass, const Dense& d, long long rows, const void* x, void* y, Activation act) {
  if (run_own_product(pass, product_of(pass, d, rows), d, rows, x, y, d.bias(), act)) return;
  run_dense(pass, d, rows, x, y);
  bias_act(pass.ctx.stream, pass.ctx.dtype, rows, d.out, y, d.bias(), nullptr, y, act);
}

}  // namespace attention
}  // namespace lc0rocm
