// plan/attention_plan.cpp - an attention body's kernel choices (see
// attention_plan.h). Each threshold below names its measurement.
#include "attention_plan.h"

#include <algorithm>

#include "limits.h"

namespace lc0rocm {
namespace {

// Smolgen's second layer norm inside its generator product
// (attn_smolgen_generate.hip, SMOLGEN_GENERATE.md) up to this batch; forced:
// up to kForcedMaxPositions.
constexpr int kGenerateDefaultPositions = 1;
constexpr int kForcedMaxPositions = 64;

// Q|K|V on the side lane beside smolgen's chain, which reads the same x and
// nothing Q|K|V writes (SIDE_LANE.md), up to this batch. Half nets only:
// measured there (float passes keep their split tf32 products, which the
// side lane has no scratch for).
constexpr int kBesideDefaultPositions = 2;

// Smolgen's chain before Q|K|V from this batch, so that its compress
// product reads x while the layer norm that wrote it left it in L2 (Q|K|V
// writes 3 x's worth first otherwise). Half nets only (a float pass's split
// of x serves both products in the other order). H100, seven rounds: batch
// 256 t82 -0.2..+1.9 %, bt4 -0.2..+1.7 %; 512 even (BENCHMARKS.md,
// "Smolgen's chain before Q|K|V").
constexpr int kSmolgenFirstDefaultPositions = 256;

// Smolgen's compress in the Q|K|V product (compress's weights stacked after
// Q|K|V's), so x is read once for both instead of twice, from this batch.
// Half nets only; not where Q|K|V runs beside smolgen or in one launch with
// the attention, nor with the unfused attention.
constexpr int kCompressDefaultPositions = 1;

// Q|K|V and the attention in one launch (half nets on sm_90, head depth 32:
// attn_qkv_attention_sm90.hip, QKV_ATTENTION_SM90.md), so Q, K and V never
// go to memory, from this batch. H100, run 90, five rounds in turns with it
// off: t82 +1.7..+7.0 % at batches 64-512, bt4 +0.8..+5.4 %; at 4-32 even
// or slower (a tile is two positions), hence from 64 (BENCHMARKS.md, "The
// Q|K|V product and the attention in one launch").
constexpr int kQkvAttentionDefaultPositions = 64;

// Smolgen's second layer norm (rows over 2,048 half values) a row to a
// block of 256 threads instead of 1,024 from limits::kWideNormDefaultRows
// rows (256). H100, fp16: those layer norms' kernel time a pass t82 b512
// -38 %, bt4 b512 -14 %; backendbench within its noise (BENCHMARKS.md,
// "Smolgen's wide layer norm").

// Dense layers of up to this many rows on gemv_rows (half nets): it gains at
// batch 1 and is even at 2, slower at 4 (H100; GEMV_ROWS.md).
constexpr int kGemvDefaultRows = 1;

// The FFNs' first products (and the attention policy's embedding and query
// | key), whose bias and activation would otherwise take a pass of their
// own, on our sm_90 product with both in its epilogue (gemm_sm90.hip,
// GEMM_SM90.md) from batch 128: bt4 lost 1-3 % at 64 (t82 gained 1-3 %),
// both gain from 128. Forced: from one position.
constexpr int kSm90FromRows = 8192;
constexpr int kSm90ForcedFromRows = 64;

// The output and FFN second products with their layer norms in the
// product's epilogue (gemm_sm90_layer_norm.hip, GEMM_SM90.md) from batch 64
// where its rounds of row tiles are at least 90 % full. H100, against the
// tuned cuBLAS products + layer_norm (5 rounds, two hosts): bt4 +0.5..4.0 %
// at batches 64-256, -0.3..+3.1 % at 512 (rounds 97 % full); t82 +0.1..1.6 %
// at 256 (97 %), -0.2..+1.3 % at 512, and -0.6..-3.9 % at 64 and 128 (73 %).
// Forced: from one position, at any fill.
constexpr int kSm90NormFromRows = 4096;
constexpr int kSm90NormMinFill = 90;

// Float products split for tf32 (three passes that keep float precision,
// TF32_SPLIT.md) from this many rows: where it started to pay on an H100
// (t82 fp32: at batch 1, 64 rows a layer, split 542 against plain 637
// positions/s; batch 2 within the spread; from batch 4 on it gains).
constexpr int kTf32SplitFromRows = 128;

// A threshold "up to" a batch size: the default, or forced to max, or off.
int up_to(const Settings& s, unsigned path, int by_default, int forced) {
  return s.off(path) ? 0 : s.forced_on(path) ? forced : by_default;
}

bool runs_fused(const AttentionRules& r, const EncoderShape& l) { return r.fused && l.depth <= limits::kFusedMaxDepth; }

}  // namespace

AttentionKernel fused_attention_kernel(const AttentionRules& r, const DeviceInfo& d, const EncoderShape& l) {
  if (!r.half || !r.matrix) return AttentionKernel::Scalar;
  if (d.nvidia) {
    if (r.mma && limits::mma_attention_fits(d, l.depth)) return AttentionKernel::Mma;
    if (limits::wmma_attention_fits(d, l.depth)) return AttentionKernel::Wmma;
    return AttentionKernel::Scalar;
  }
  if (limits::mfma_attention_fits(d, l.depth)) return AttentionKernel::Mfma;
  if (limits::rdna_attention_fits(d, l.depth)) return AttentionKernel::RdnaWmma;
  return AttentionKernel::Scalar;
}

namespace {

bool runs_beside(const EncoderShape& l, int n, int beside_positions) {
  return l.smolgen && n <= beside_positions;
}

bool runs_qkv_attention(const AttentionRules& r, const EncoderShape& l, int n, int beside_positions) {
  return r.qkv_attention_positions > 0 && n >= r.qkv_attention_positions && runs_fused(r, l) && r.matrix && r.mma &&
         !runs_beside(l, n, beside_positions) && limits::qkv_attention_sm90_fits(l.heads, l.depth, l.embedding);
}

bool runs_with_compress(const AttentionRules& r, const EncoderShape& l, int n, int beside_positions) {
  return l.qkv_with_compress > 0 && r.compress_positions > 0 && n >= r.compress_positions && runs_fused(r, l) &&
         !runs_beside(l, n, beside_positions) && !runs_qkv_attention(r, l, n, beside_positions);
}

bool runs_generate(const AttentionNet& net, const AttentionRules& r, const DeviceInfo& d, const EncoderShape& l,
                   int n) {
  return l.smolgen && net.smolgen_outputs > 0 && n <= r.generate_positions &&
         limits::smolgen_generate_fits(d, l.heads, l.gen, net.smolgen_outputs);
}

EncoderPlan plan_encoder(const AttentionNet& net, const AttentionRules& r, const DeviceInfo& d, const EncoderShape& l,
                         int n, int beside_positions) {
  EncoderPlan p;
  if (runs_qkv_attention(r, l, n, beside_positions)) p.order = QkvOrder::OneLaunch;
  else if (runs_beside(l, n, beside_positions)) p.order = QkvOrder::Beside;
  else if (runs_with_compress(r, l, n, beside_positions)) p.order = QkvOrder::WithCompress;
  else if (l.smolgen && r.smolgen_first_positions > 0 && n >= r.smolgen_first_positions) p.order = QkvOrder::SmolgenFirst;
  p.attention = p.order == QkvOrder::OneLaunch ? AttentionKernel::QkvSm90
                : runs_fused(r, l)           ? fused_attention_kernel(r, d, l)
                                             : AttentionKernel::Unfused;
  p.generate = r.half && runs_generate(net, r, d, l, n);
  const long long rows = 64LL * n;
  p.out_norm_sm90 = takes_sm90_norm(r, dense_route(r, l.out, DenseRole::NormProduct), l.out, rows);
  p.ffn2_norm_sm90 = takes_sm90_norm(r, dense_route(r, l.ffn2, DenseRole::NormProduct), l.ffn2, rows);
  return p;
}

// The policy head's encoders: no side lane, nothing before Q|K|V, no one
// launch, no sm_90 layer norms.
AttentionRules policy_rules(const AttentionRules& body) {
  AttentionRules r = body;
  r.beside_positions = 0;
  r.smolgen_first_positions = 0;
  r.qkv_attention_positions = 0;
  r.qkv_half_sums = false;
  r.sm90_norm_from_rows = 0;
  return r;
}

}  // namespace

AttentionRules attention_rules(const AttentionNet& net, const DeviceInfo& d, const Settings& s, const Sm90Facts& sm90) {
  AttentionRules r;
  const bool half = net.half;
  r.half = half;
  r.policy_only = net.policy_only;
  r.fused = !s.off(LC0ROCM_PATH_FUSED_ATTENTION);
  r.matrix = !s.off(LC0ROCM_PATH_MATRIX_ATTENTION);
  r.mma = !s.off(LC0ROCM_PATH_MMA_ATTENTION);
  if (half) {
    r.generate_positions = up_to(s, LC0ROCM_PATH_SMOLGEN_GENERATE, kGenerateDefaultPositions, kForcedMaxPositions);
    if (s.side_stream && !net.policy_only)
      r.beside_positions = up_to(s, LC0ROCM_PATH_SMOLGEN_BESIDE, kBesideDefaultPositions, kForcedMaxPositions);
    if (!net.policy_only)
      r.smolgen_first_positions = up_to(s, LC0ROCM_PATH_SMOLGEN_FIRST, kSmolgenFirstDefaultPositions, 1);
    r.compress_positions = up_to(s, LC0ROCM_PATH_QKV_COMPRESS, kCompressDefaultPositions, kCompressDefaultPositions);
    if (sm90.qkv_attention && !net.policy_only)
      r.qkv_attention_positions = up_to(s, LC0ROCM_PATH_QKV_ATTENTION, kQkvAttentionDefaultPositions, 1);
    r.qkv_half_sums = s.half_sums;
    if (!net.policy_only) r.gemv_max_rows = up_to(s, LC0ROCM_PATH_GEMV, kGemvDefaultRows, limits::kGemvMaxRows);
    if (sm90.gemm)
      r.sm90_from_rows = up_to(s, LC0ROCM_PATH_SM90_GEMM, kSm90FromRows, kSm90ForcedFromRows);
    r.sm90_half_sums = s.half_sums;
    if (sm90.layer_norm_blocks > 0 && !net.encoders.empty() && !net.policy_only) {
      r.sm90_norm_from_rows = up_to(s, LC0ROCM_PATH_SM90_LAYER_NORM, kSm90NormFromRows, kSm90ForcedFromRows);
      r.sm90_norm_min_fill = s.forced_on(LC0ROCM_PATH_SM90_LAYER_NORM) ? 0 : kSm90NormMinFill;
      r.sm90_norm_blocks = sm90.layer_norm_blocks;
    }
  } else if (d.tf32_products) {
    r.tf32_from_rows = up_to(s, LC0ROCM_PATH_TF32_SPLIT, kTf32SplitFromRows, 1);
  }
  r.wide_norm_rows = up_to(s, LC0ROCM_PATH_WIDE_NORM, limits::kWideNormDefaultRows, 1);
  r.side_lane = r.beside_positions > 0 &&
                std::any_of(net.encoders.begin(), net.encoders.end(), [](const EncoderShape& l) { return l.smolgen; });
  return r;
}

DenseRoute dense_route(const AttentionRules& r, DenseShape shape, DenseRole role) {
  DenseRoute route;
  route.sm90 = role == DenseRole::Sm90Product && r.sm90_from_rows > 0 && limits::gemm_sm90_fits(shape.out, shape.in);
  route.sm90_norm = role == DenseRole::NormProduct && r.sm90_norm_from_rows > 0 &&
                    limits::gemm_sm90_layer_norm_fits(shape.out, shape.in);
  route.sm90_half_sums = r.sm90_half_sums && (route.sm90_norm || (route.sm90 && shape.out % 256 == 0));
  route.tf32 = r.tf32_from_rows > 0 && limits::tf32_split_fits(shape.in);
  return route;
}

Product product_for(const AttentionRules& r, const DeviceInfo& d, const DenseRoute& route, DenseShape shape,
                    long long rows, bool tf32_room) {
  if (r.half && rows <= r.gemv_max_rows && limits::gemv_rows_fits(d, rows, shape.out, shape.in)) return Product::Gemv;
  if (r.half && route.sm90 && rows >= r.sm90_from_rows) return Product::Sm90;
  if (route.tf32 && rows >= r.tf32_from_rows && tf32_room) return Product::Tf32Split;
  return Product::Blas;
}

bool takes_sm90_norm(const AttentionRules& r, const DenseRoute& route, DenseShape shape, long long rows) {
  return route.sm90_norm && rows >= r.sm90_norm_from_rows &&
         limits::gemm_sm90_layer_norm_fill(rows, shape.out, r.sm90_norm_blocks) >= std::max(r.sm90_norm_min_fill, 1);
}

AttentionPlan plan_attention(const AttentionNet& net, const AttentionRules& rules, const DeviceInfo& device, int n,
                             bool captured) {
  AttentionPlan plan;
  plan.batch = n;
  const int beside = captured && rules.side_lane ? rules.beside_positions : 0;
  for (const EncoderShape& l : net.encoders) plan.encoders.push_back(plan_encoder(net, rules, device, l, n, beside));
  const AttentionRules policy = policy_rules(rules);
  for (const EncoderShape& l : net.policy_encoders)
    plan.policy_encoders.push_back(plan_encoder(net, policy, device, l, n, 0));
  plan.norm_exchange = std::any_of(plan.encoders.begin(), plan.encoders.end(),
                                   [](const EncoderPlan& p) { return p.out_norm_sm90 || p.ffn2_norm_sm90; });
  if (net.pe_dense)
    plan.norm_exchange = plan.norm_exchange ||
                         takes_sm90_norm(rules, dense_route(rules, net.embedding_ffn2, DenseRole::NormProduct),
                                         net.embedding_ffn2, 64LL * n);
  // Dependent launches where Q|K|V runs beside smolgen: together they gain
  // (t82 b1 +13..15 %, bt4 +9..14 % on an H100), each alone does not
  // (SIDE_LANE.md). Elsewhere our kernels sit between cuBLAS GEMMs (t82
  // measured -6..-8 % at b16 with them, bt4 even).
  plan.dependent_launch = device.dependent_launch && rules.side_lane && n <= rules.beside_positions;
  return plan;
}

std::string describe_attention(const AttentionNet& net, const AttentionRules& r, const DeviceInfo& d, int n) {
  if (net.policy_only) return "attention policy head";
  const AttentionPlan plan = plan_attention(net, r, d, n, true);
  std::string text = "attention body, " + std::to_string(net.encoders.size()) + " encoder layers of " +
                     std::to_string(net.embedding) + (net.pe_dense ? ", PE_DENSE embedding" : "");
  // Smolgen, as its first layer runs it.
  for (size_t i = 0; i < net.encoders.size(); ++i) {
    if (!net.encoders[i].smolgen) continue;
    const EncoderPlan& p = plan.encoders[i];
    text += std::string(", smolgen a layer at a time") +
            (p.order == QkvOrder::WithCompress ? ", its compress in the Q|K|V product" : "") +
            (p.generate ? ", its second layer norm in the generator" : "") +
            (p.order == QkvOrder::Beside ? ", beside Q|K|V" : "");
    break;
  }
  if (std::any_of(plan.encoders.begin(), plan.encoders.end(),
                  [](const EncoderPlan& p) { return p.attention == AttentionKernel::QkvSm90; }))
    text += r.qkv_half_sums ? ", Q|K|V with the attention in one launch (sm_90, half sums)"
                            : ", Q|K|V with the attention in one launch (sm_90)";
  if (r.tf32_from_rows > 0)
    text += ", float products from " + std::to_string(r.tf32_from_rows) + " rows as split tf32 (3 passes)";
  // The FFN's first products on sm_90, as the last layer that takes them says.
  const EncoderShape* sm90 = nullptr;
  for (const EncoderShape& l : net.encoders)
    if (dense_route(r, l.ffn1, DenseRole::Sm90Product).sm90) sm90 = &l;
  if (sm90 != nullptr && 64LL * n >= r.sm90_from_rows)
    text += ", the FFN's first products on sm_90 wgmma from " + std::to_string(r.sm90_from_rows) + " rows" +
            (dense_route(r, sm90->ffn1, DenseRole::Sm90Product).sm90_half_sums
                 ? " (half sums) (ping-pong on 128 x 256 tiles)"
                 : "");
  if (!plan.encoders.empty() && (plan.encoders[0].out_norm_sm90 || plan.encoders[0].ffn2_norm_sm90)) {
    const EncoderPlan& p = plan.encoders[0];
    const DenseShape shape = p.out_norm_sm90 ? net.encoders[0].out : net.encoders[0].ffn2;
    text += std::string(p.out_norm_sm90 && p.ffn2_norm_sm90 ? ", output and FFN products"
                        : p.out_norm_sm90                   ? ", output products"
                                                            : ", FFN products") +
            " with their layer norms on sm_90 wgmma from " + std::to_string(r.sm90_norm_from_rows) +
            " rows where its rounds of row tiles are at least " + std::to_string(std::max(r.sm90_norm_min_fill, 1)) +
            " % full (" + std::to_string(limits::gemm_sm90_layer_norm_fill(64LL * n, shape.out, r.sm90_norm_blocks)) +
            " % here)" + (r.sm90_half_sums ? " (half sums)" : "");
  }
  if (n <= r.gemv_max_rows) text += ", per-position layers on gemv_rows";
  return text;
}

}  // namespace lc0rocm
