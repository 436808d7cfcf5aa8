// attention.cpp - attention body, encoder layers with smolgen, attention
// policy / value / moves-left heads (see attention.h for tensors and numerics).
//
// Every dense layer is one GEMM over all n*64 squares (tensor cores in fp16,
// float accumulation); bias, activation, residual, alpha and layer norm are
// fused into single kernels (attention_kernels.h). The attention itself
// (bias, Q.K^T, smolgen add, softmax, .V) is one kernel per (position, head)
// for heads of depth <= 48, else split heads + strided batched GEMMs over
// (position, head) + softmax + merge heads.
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "attention_kernels.h"
#include "env_switch.h"
#include "kernels/ops.h"

namespace lc0rocm {
namespace {

constexpr int kPolicyAttention = 3;      // NetworkFormat.POLICY_ATTENTION
constexpr int kValueWdl = 2;             // NetworkFormat.VALUE_WDL
constexpr int kEmbeddingPeDense = 2;     // NetworkFormat.INPUT_EMBEDDING_PE_DENSE
constexpr int kPeDensePlanes = 12;       // PE_DENSE preprocesses the 12 piece planes
constexpr float kEpsPeDense = 1e-3f;
constexpr float kEpsDefault = 1e-6f;
constexpr float kEpsHead = 1e-3f;        // embedding and smolgen layer norms

// ------------------------------------------------------------------ weights

// A dense layer y = x . W^T + b with lc0's [out][in] weights in the net's
// storage type and float32 biases (absent for compress / smolgen_w).
struct Dense {
  DeviceBuffer w, b;
  int in = 0, out = 0;
  // Float nets on tf32 tensor cores: the weights split head | rest | head
  // ([out][3*in], kernels/tf32_split.hip), used from split_from_rows rows on.
  DeviceBuffer w3;
  int split_from_rows = 0;
  // Half nets on sm_90: our own product (kernels/gemm_sm90.hip) from this
  // many rows on, bias and activation in its epilogue; 0: never.
  int sm90_from_rows = 0;
  bool sm90_half_sums = false;  // on sm_90 (either kernel), the products summed in half
  // Output and FFN second products of half nets on sm_90: with the layer
  // norm after them (kernels/gemm_sm90_layer_norm.hip) from this many rows
  // on; 0: never.
  int sm90_norm_from_rows = 0;
  int sm90_norm_min_fill = 0;  // and where its rounds of row tiles are at least this full (percent)
};

Dense load_dense(const WeightStore& ws, DType dt, const std::string& w_name,
                 const std::string& b_name, int in) {
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

// Layer-norm gammas and betas, float32.
struct Norm {
  DeviceBuffer gammas, betas;
};

Norm load_norm(const WeightStore& ws, const std::string& prefix, int width) {
  return Norm{ws.upload_f32(prefix + "gammas", width), ws.upload_f32(prefix + "betas", width)};
}

// A head count: the 1-element tensor "meta." + name (native.py's name) or
// prefix + name; 0 when absent.
int load_count(const WeightStore& ws, const std::string& prefix, const std::string& name) {
  if (ws.has("meta." + name)) return ws.scalar("meta." + name);
  if (ws.has(prefix + name)) return ws.scalar(prefix + name);
  return 0;
}

const float* f32(const DeviceBuffer& b) { return b.as<float>(); }

struct Smolgen {
  Dense compress, dense1, dense2;
  Norm ln1, ln2;
  int hidden_channels = 0, gen = 0;
};

// A feed-forward block with its post-LN, x = LN(alpha * dense2(act(dense1(x)))
// + x): every encoder layer's second half and the PE_DENSE embedding's FFN,
// so both take the same fused products.
struct Ffn {
  Dense dense1, dense2;
  Norm ln;
};

Ffn load_ffn(const WeightStore& ws, DType dt, const std::string& weights, const std::string& norm, int embedding) {
  Ffn f;
  f.dense1 = load_dense(ws, dt, weights + "dense1_w", weights + "dense1_b", embedding);
  f.dense2 = load_dense(ws, dt, weights + "dense2_w", weights + "dense2_b", f.dense1.out);
  f.ln = load_norm(ws, norm, embedding);
  return f;
}

struct Encoder {
  Dense qkv;    // q, k, v stacked: [3 * d_model][embedding]
  Dense out;    // mha dense
  Norm ln1;     // after the attention's output product
  Ffn ffn;
  bool has_smolgen = false;
  Smolgen smolgen;
  int heads = 0, d_model = 0, depth = 0, embedding = 0;
  // Half nets with smolgen: qkv.w's rows, smolgen's compress weights
  // stacked after Q|K|V's (one product reads x for both); 0: Q|K|V's alone.
  int qkv_with_compress = 0;
};

std::vector<float> concat(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> all;
  for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
  return all;
}

Encoder load_encoder(const WeightStore& ws, DType dt, const std::string& p, int embedding,
                     int heads, int smolgen_gen_width) {
  Encoder e;
  e.embedding = embedding;
  e.heads = heads;
  const auto& qb = ws.floats(p + "mha.q_b");
  e.d_model = static_cast<int>(qb.size());
  if (heads <= 0 || e.d_model == 0 || e.d_model % heads)
    fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + p + "mha: d_model " + std::to_string(e.d_model) +
                                       " does not split over " + std::to_string(heads) + " heads");
  e.depth = e.d_model / heads;
  const long long qkv_count = static_cast<long long>(e.d_model) * embedding;
  // One GEMM computes q, k and v: stack their weights and biases. In half
  // nets smolgen's compress weights follow (the product may compute both).
  std::vector<float> w = concat({&ws.floats(p + "mha.q_w", qkv_count), &ws.floats(p + "mha.k_w", qkv_count),
                                 &ws.floats(p + "mha.v_w", qkv_count)});
  const std::string s = p + "mha.smolgen.";
  e.has_smolgen = ws.has(s + "compress");
  if (e.has_smolgen && dt == DType::F16) {
    // Only where Q|K|V's and compress's columns are multiples of 8 halves:
    // the product's rows, Q|K|V's and the channels then stay 16-byte
    // aligned, which the tensor-core attention and copy_rows need.
    const size_t compress = ws.count(s + "compress");
    const int channels = static_cast<int>(compress / embedding);
    if (compress % embedding == 0 && channels > 0 && channels % 8 == 0 && e.d_model % 8 == 0) {
      const std::vector<float>& c = ws.floats(s + "compress", static_cast<long long>(compress));
      w.insert(w.end(), c.begin(), c.end());
      e.qkv_with_compress = 3 * e.d_model + channels;
    }
  }
  std::vector<float> b = concat({&qb, &ws.floats(p + "mha.k_b", e.d_model),
                                 &ws.floats(p + "mha.v_b", e.d_model)});
  e.qkv.in = embedding;
  e.qkv.out = 3 * e.d_model;
  e.qkv.w = upload_floats(w, dt);
  e.qkv.b = upload_floats(b, DType::F32);
  e.out = load_dense(ws, dt, p + "mha.dense_w", p + "mha.dense_b", e.d_model);
  e.ffn = load_ffn(ws, dt, p + "ffn.", p + "ln2_", embedding);
  if (e.out.out != embedding || e.ffn.dense2.out != embedding)
    fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + p + ": output width differs from embedding " +
                                       std::to_string(embedding));
  e.ln1 = load_norm(ws, p + "ln1_", embedding);

  if (e.has_smolgen) {
    Smolgen& g = e.smolgen;
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
  return e;
}

// LC0ROCM_GEMM_SM90=0: no product of a half net runs on our own sm_90
// product (kernels/gemm_sm90.hip, native/GEMM_SM90.md); by default those
// whose bias and activation would otherwise take a pass of their own do:
// the FFNs' first, the encoders' and the PE_DENSE embedding's, the
// attention policy's embedding and its query | key product; bias and
// activation in the product's epilogue, no bias_act pass.
// LC0ROCM_GEMM_SM90_ROWS: from how many rows (64 a position).
// LC0ROCM_GEMM_SM90_HALF_SUMS (on by default; 0: float sums): the products
// of both sm_90 kernels (this one where N is a multiple of 256, and
// gemm_sm90_layer_norm) sum in half, as lc0's cuda backend's cublasHgemm
// (native/GEMM_SM90.md, "Half sums": H200 +0.6..+1.4 % at b256-512, the
// policy error 2.2-2.6x, within the fp16 bound), this one on the wide
// ping-pong schedule (native/GEMM_SM90.md, "Wide ping-pong": H200, t82 b512
// the FFN's first products -12 %; backendbench t82 and bt4 b256-512
// +1.4..+2.3 % on the means of runs 107-108).
constexpr int kSm90FromRows = 8192;  // batch 128: bt4 lost 1-3 % at 64 (t82 gained 1-3 %), both gain from 128

// What runs there, for describe(): from which rows (0: nothing), and how.
struct Sm90Plan {
  int from_rows = 0;
  bool half_sums = false;
};

// What those switches ask; from_rows 0 where the net's precision or the
// device cannot take our product.
struct Sm90Settings {
  int from_rows = 0;
  bool half_sums = false;
};

bool sm90_half_sums() { return env_switch("LC0ROCM_GEMM_SM90_HALF_SUMS", true); }

Sm90Settings sm90_settings(const NetConfig& cfg) {
  Sm90Settings s;
  if (!env_switch("LC0ROCM_GEMM_SM90", true) || cfg.dtype != DType::F16 || !gemm_sm90_prepare(cfg.device)) return s;
  s.from_rows = std::max(env_int("LC0ROCM_GEMM_SM90_ROWS", kSm90FromRows), 1);
  s.half_sums = sm90_half_sums();
  return s;
}

// d on our product under s, where its shape fits. Half sums where the
// 256-wide tiles fit d's outputs; otherwise gemm_sm90 sums in float.
void plan_sm90_product(Dense& d, const Sm90Settings& s) {
  if (s.from_rows <= 0 || !gemm_sm90_fits(d.out, d.in)) return;
  d.sm90_from_rows = s.from_rows;
  d.sm90_half_sums = s.half_sums && d.out % 256 == 0;
}

Sm90Plan plan_sm90_products(std::vector<Encoder>& layers, Ffn* embedding_ffn, const NetConfig& cfg) {
  const Sm90Settings s = sm90_settings(cfg);
  if (s.from_rows <= 0) return {};
  Sm90Plan planned;
  for (Encoder& l : layers) {
    plan_sm90_product(l.ffn.dense1, s);
    const Dense& ffn1 = l.ffn.dense1;
    if (ffn1.sm90_from_rows) planned = Sm90Plan{s.from_rows, ffn1.sm90_half_sums};
  }
  if (embedding_ffn != nullptr) plan_sm90_product(embedding_ffn->dense1, s);
  return planned;
}

// ", ... on sm_90 wgmma" for describe() of a batch of n: whether products
// run on our sm_90 one.
std::string sm90_path(const Sm90Plan& plan, int n) {
  if (plan.from_rows == 0 || static_cast<long long>(n) * kSquares < plan.from_rows) return "";
  return ", the FFN's first products on sm_90 wgmma from " + std::to_string(plan.from_rows) + " rows" +
         (plan.half_sums ? " (half sums) (ping-pong on 128 x 256 tiles)" : "");
}

// LC0ROCM_GEMM_SM90_NORM_ROWS: from how many rows the encoder layers'
// output and FFN second products of a half net run on sm_90 with their
// layer norms in the product's epilogue (kernels/gemm_sm90_layer_norm.hip,
// native/GEMM_SM90.md); 0: never. LC0ROCM_GEMM_SM90_NORM_FILL: and only
// where its rounds of row tiles are at least this full (percent; 0: any).
// H100, against the tuned cuBLAS products + layer_norm (5 rounds, two
// hosts): bt4 +0.5..4.0 % at batches 64-256, -0.3..+3.1 % at 512 (rounds
// 97 % full); t82 +0.1..1.6 % at 256 (97 %), -0.2..+1.3 % at 512, and
// -0.6..-3.9 % at 64 and 128 (73 %).
constexpr int kSm90NormFromRows = 4096;
constexpr int kSm90NormMinFill = 90;

// Plans it where the device and the products' shapes take it.
void plan_sm90_layer_norms(std::vector<Encoder>& layers, Ffn* embedding_ffn, const NetConfig& cfg) {
  const int from_rows = env_int("LC0ROCM_GEMM_SM90_NORM_ROWS", kSm90NormFromRows);
  const int min_fill = env_int("LC0ROCM_GEMM_SM90_NORM_FILL", kSm90NormMinFill);
  const bool half_sums = sm90_half_sums();
  if (from_rows <= 0 || cfg.dtype != DType::F16 || layers.empty() || !gemm_sm90_layer_norm_prepare(cfg.device))
    return;
  auto plan = [&](Dense& d) {
    if (!gemm_sm90_layer_norm_fits(d.out, d.in)) return;
    d.sm90_norm_from_rows = from_rows;
    d.sm90_norm_min_fill = min_fill;
    d.sm90_half_sums = half_sums;
  };
  for (Encoder& l : layers) {
    plan(l.out);
    plan(l.ffn.dense2);
  }
  if (embedding_ffn != nullptr) plan(embedding_ffn->dense2);
}

// Whether d runs on gemm_sm90_layer_norm at this many rows.
bool takes_sm90_norm(const Dense& d, long long rows) {
  return d.sm90_norm_from_rows > 0 && rows >= d.sm90_norm_from_rows &&
         gemm_sm90_layer_norm_fill(rows, d.out) >= std::max(d.sm90_norm_min_fill, 1);
}

// ", ... with their layer norms on sm_90 wgmma" for describe() of a batch of
// n, with both rules that chose it: the rows, and how full its rounds are.
std::string sm90_norm_path(const std::vector<Encoder>& layers, int n) {
  if (layers.empty()) return "";
  const Encoder& l = layers.front();
  const long long rows = static_cast<long long>(n) * kSquares;
  const bool out = takes_sm90_norm(l.out, rows), ffn2 = takes_sm90_norm(l.ffn.dense2, rows);
  if (!out && !ffn2) return "";
  const Dense& d = out ? l.out : l.ffn.dense2;
  return std::string(out && ffn2 ? ", output and FFN products" : out ? ", output products" : ", FFN products") +
         " with their layer norms on sm_90 wgmma from " + std::to_string(d.sm90_norm_from_rows) +
         " rows where its rounds of row tiles are at least " + std::to_string(std::max(d.sm90_norm_min_fill, 1)) +
         " % full (" + std::to_string(gemm_sm90_layer_norm_fill(rows, d.out)) + " % here)" +
         (d.sm90_half_sums ? " (half sums)" : "");
}

std::vector<Encoder> load_encoders(const WeightStore& ws, DType dt, const std::string& prefix,
                                   int embedding, int heads, int smolgen_gen_width) {
  std::vector<Encoder> layers;
  for (int i = 0; ws.has(prefix + std::to_string(i) + ".mha.q_w"); ++i)
    layers.push_back(load_encoder(ws, dt, prefix + std::to_string(i) + ".", embedding, heads,
                                  smolgen_gen_width));
  return layers;
}

// LC0ROCM_TF32_SPLIT_ROWS: float dense layers of at least this many rows run
// as one tf32 product of split operands (native/TF32_SPLIT.md); 0: plain
// float products everywhere. Unset: kTf32SplitFromRows, where it started
// to pay on an H100 (t82 fp32: at batch 1, 64 rows a layer, split 542 against
// plain 637 positions/s; batch 2 within the spread; from batch 4 on it gains).
constexpr int kTf32SplitFromRows = 128;

// Splits a float net's dense weights for tf32 products (on devices that
// have them) and keeps the largest split input one position brings, which
// sizes the scratch of a pass.
class Tf32Splitter {
 public:
  explicit Tf32Splitter(const NetConfig& cfg)
      : from_rows_(cfg.dtype == DType::F32 && cfg.device.tf32_products
                       ? std::max(env_int("LC0ROCM_TF32_SPLIT_ROWS", kTf32SplitFromRows), 0)
                       : 0) {}

  // d runs on rows_per_position rows per position.
  void split(Dense& d, int rows_per_position) {
    if (from_rows_ == 0 || !d.w) return;
    DeviceBuffer w3(3 * d.w.bytes());
    if (!tf32_split(nullptr, d.out, d.in, d.w.as<float>(), w3.as<float>(), Tf32SplitOrder::Weights)) return;
    GPU_CHECK(hipStreamSynchronize(nullptr));
    d.w3 = std::move(w3);
    d.split_from_rows = from_rows_;
    floats_per_position_ = std::max(floats_per_position_, size_t(3) * rows_per_position * d.in);
  }

  void split(std::vector<Encoder>& layers) {
    for (Encoder& l : layers) {
      for (Dense* d : {&l.qkv, &l.out, &l.ffn.dense1, &l.ffn.dense2}) split(*d, kSquares);
      if (l.has_smolgen) {
        split(l.smolgen.compress, kSquares);
        split(l.smolgen.dense1, 1);
        split(l.smolgen.dense2, 1);
      }
    }
  }

  int from_rows() const { return from_rows_; }
  size_t floats_per_position() const { return floats_per_position_; }

 private:
  int from_rows_;
  size_t floats_per_position_ = 0;
};

// Scratch for the split inputs of a pass of n positions (nothing where the
// body splits nothing or ctx already has enough).
void reserve_tf32_scratch(ForwardContext& ctx, size_t floats_per_position, int n) {
  const size_t floats = floats_per_position * static_cast<size_t>(n);
  if (floats == 0 || ctx.tf32_scratch_floats >= floats) return;
  ctx.tf32_scratch = ctx.arena.take<float>(floats);
  ctx.tf32_scratch_floats = floats;
}

// ", float products ..." for describe(): which products run split.
std::string tf32_path(int from_rows) {
  return from_rows == 0 ? ""
                        : ", float products from " + std::to_string(from_rows) +
                              " rows as split tf32 (3 passes)";
}

// ------------------------------------------------------------------ running

// Passes of up to this many positions run their layers of as many rows on
// gemv_rows unless LC0ROCM_GEMV_ROWS says otherwise: it gains at batch 1 and
// is even at 2, slower at 4 (H100; native/GEMV_ROWS.md).
constexpr int kGemvDefaultRows = 1;

// A few rows (smolgen's per-position layers and the heads' at batches up to
// ctx.gemv_max_rows) on gemv_rows; false: the caller runs BLAS.
bool run_dense_gemv(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y,
                    const float* bias, Activation act) {
  return ctx.dtype == DType::F16 && rows <= ctx.gemv_max_rows &&
         gemv_rows(ctx.stream, ctx.device, static_cast<int>(rows), d.out, d.in, x, d.w.get(), bias, act, y);
}

// Half products planned for our sm_90 product (plan_sm90_products) from
// enough rows; false: the caller runs BLAS.
bool run_dense_sm90(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y,
                    const float* bias, Activation act) {
  return d.sm90_from_rows > 0 && rows >= d.sm90_from_rows && ctx.dtype == DType::F16 &&
         gemm_sm90(ctx.stream, ctx.device, rows, d.out, d.in, x, d.w.get(), bias, act, y, d.sm90_half_sums);
}

// A float product of enough rows as one tf32 product over 3 * in columns:
// the input split rest | head | head against the weights' head | rest | head
// (kernels/tf32_split.hip). x_split: ctx's scratch already holds x split (the
// product just before took the same x of as many rows and columns). false:
// the caller runs the float product.
bool run_dense_tf32(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y,
                    bool x_split) {
  if (d.split_from_rows == 0 || rows < d.split_from_rows ||
      static_cast<size_t>(3 * rows * d.in) > ctx.tf32_scratch_floats)
    return false;
  if (!x_split && !tf32_split(ctx.stream, rows, d.in, static_cast<const float*>(x), ctx.tf32_scratch,
                              Tf32SplitOrder::Activations))
    return false;
  ctx.blas.gemm_tf32(false, true, static_cast<int>(rows), d.out, 3 * d.in, ctx.tf32_scratch, 3 * d.in,
                     d.w3.as<float>(), 3 * d.in, static_cast<float*>(y), d.out);
  return true;
}

// y [rows][out] = x [rows][in] . W^T (bias not added). Returns whether it
// ran as a split tf32 product, leaving x split in ctx's scratch for a next
// product of the same x (x_split there).
bool run_dense(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y,
               bool x_split = false) {
  if (run_dense_gemv(ctx, d, rows, x, y, nullptr, Activation::None)) return false;
  if (run_dense_sm90(ctx, d, rows, x, y, nullptr, Activation::None)) return false;
  if (run_dense_tf32(ctx, d, rows, x, y, x_split)) return true;
  ctx.blas.gemm(ctx.dtype, false, true, static_cast<int>(rows), d.out, d.in, x, d.in, d.w.get(), d.in,
                y, d.out);
  return false;
}

// y = act(x . W^T + b).
void run_dense_act(ForwardContext& ctx, const Dense& d, long long rows, const void* x, void* y,
                   Activation act) {
  if (run_dense_gemv(ctx, d, rows, x, y, f32(d.b), act)) return;
  if (run_dense_sm90(ctx, d, rows, x, y, f32(d.b), act)) return;
  run_dense(ctx, d, rows, x, y);
  bias_act(ctx.stream, ctx.dtype, rows, d.out, y, f32(d.b), nullptr, y, act);
}

struct EncoderParams {
  float alpha, eps;
  Activation smolgen_act, ffn_act;
  const Dense* smolgen_global;  // [4096][gen], shared by all layers
  bool fused;                   // fused attention kernel where the head depth allows
  bool tensor_cores;            // its tensor-core version where that applies
  bool mma_attention;           // that on mma.sync fragments where it applies, else wmma
  int generate_positions;       // smolgen's LN2 + generator in one launch up to this batch (half)
  int beside_positions;         // Q|K|V on the side lane beside smolgen's chain up to this batch
  int smolgen_first_positions;  // smolgen's chain before Q|K|V from this batch (half; 0: never)
  int compress_positions;       // smolgen's compress in the Q|K|V product from this batch (half; 0: never)
  int wide_norm_rows;           // smolgen's LN2 on 256-thread blocks from this batch (0: never)
  int qkv_attention_positions;  // Q|K|V and the attention in one launch (sm_90) from this batch (0: never)
  bool qkv_half_sums;           // that launch's Q|K|V product sums in half
};

// LC0ROCM_ATTN_UNFUSED=1 runs attention as split heads + batched GEMMs +
// softmax + merge (the path for deep heads) everywhere, to compare.
bool fused_attention_enabled() { return !env_switch("LC0ROCM_ATTN_UNFUSED", false); }

// LC0ROCM_ATTN_NO_TC=1 keeps the fused attention on the scalar kernel (fp16
// on NVIDIA otherwise runs the tensor-core one), to compare.
bool tensor_core_attention_enabled() { return !env_switch("LC0ROCM_ATTN_NO_TC", false); }

// LC0ROCM_ATTN_WMMA=1 keeps the tensor-core attention on its wmma kernel
// (the mma.sync one runs otherwise where it applies), to compare.
bool mma_attention_enabled() { return !env_switch("LC0ROCM_ATTN_WMMA", false); }

// LC0ROCM_SMOLGEN_GENERATE: batches up to this size run smolgen's second
// layer norm inside its generator product (attn_smolgen_generate.hip,
// native/SMOLGEN_GENERATE.md); 0: never. Half nets only.
constexpr int kSmolgenGenerateDefaultPositions = 1;
constexpr int kSmolgenGenerateMaxPositions = 64;

int smolgen_generate_positions(const NetConfig& cfg) {
  if (cfg.dtype != DType::F16) return 0;
  return std::clamp(env_int("LC0ROCM_SMOLGEN_GENERATE", kSmolgenGenerateDefaultPositions), 0,
                    kSmolgenGenerateMaxPositions);
}

// LC0ROCM_SMOLGEN_BESIDE: batches up to this size run each layer's Q|K|V
// product on the side lane (body.h) beside smolgen's chain, which reads
// the same x and nothing Q|K|V writes (native/SIDE_LANE.md); 0: never.
// Half nets only: measured there (float passes keep their split tf32
// products, which the side lane has no scratch for).
constexpr int kSmolgenBesideDefaultPositions = 2;
constexpr int kSmolgenBesideMaxPositions = 64;

int smolgen_beside_positions(const NetConfig& cfg) {
  if (cfg.dtype != DType::F16 || !env_switch("LC0ROCM_SIDE_STREAM", true)) return 0;  // no side lane: network.cpp
  return std::clamp(env_int("LC0ROCM_SMOLGEN_BESIDE", kSmolgenBesideDefaultPositions), 0,
                    kSmolgenBesideMaxPositions);
}

// LC0ROCM_SMOLGEN_FIRST: batches of this size or more run each layer's
// smolgen chain before its Q|K|V product, so that smolgen's compress
// product reads x while the layer norm that wrote it left it in L2 (Q|K|V
// writes 3 x's worth first otherwise); 0: never. Half nets only (a float
// pass's split of x serves both products in the other order). H100, seven
// rounds: batch 256 t82 -0.2..+1.9 %, bt4 -0.2..+1.7 %; 512 even
// (BENCHMARKS.md, "Smolgen's chain before Q|K|V"). Q|K|V with the attention
// in one launch, Q|K|V beside smolgen (small batches) and the compress in the
// Q|K|V product take precedence.
constexpr int kSmolgenFirstDefaultPositions = 256;

int smolgen_first_positions(const NetConfig& cfg) {
  if (cfg.dtype != DType::F16) return 0;
  return std::max(0, env_int("LC0ROCM_SMOLGEN_FIRST", kSmolgenFirstDefaultPositions));
}

// LC0ROCM_QKV_COMPRESS: batches of this size or more compute each layer's
// smolgen compress in its Q|K|V product (compress's weights stacked after
// Q|K|V's: Encoder::qkv_with_compress), so x is read once for both instead
// of twice; the fused attention reads Q|K|V rows of that width, and
// copy_rows gathers the compressed channels for smolgen's dense1. 0: never.
// Half nets only; not where smolgen's chain runs in one launch or beside
// Q|K|V, nor with the unfused attention.
constexpr int kQkvCompressDefaultPositions = 1;

int qkv_compress_positions(const NetConfig& cfg) {
  if (cfg.dtype != DType::F16) return 0;
  return std::max(0, env_int("LC0ROCM_QKV_COMPRESS", kQkvCompressDefaultPositions));
}

// LC0ROCM_QKV_ATTENTION: batches of this size or more run each layer's
// Q|K|V product and its attention in one launch (half nets on sm_90, head
// depth 32: attn_qkv_attention_sm90.hip, native/QKV_ATTENTION_SM90.md), so
// Q, K and V never go to memory; smolgen's chain runs first (the kernel
// reads its logits). 0: never. Not with LC0ROCM_ATTN_UNFUSED, _NO_TC or
// _WMMA (the attention on another kernel, to compare). H100, run 90, five
// rounds in turns with it off: t82 +1.7..+7.0 % at batches 64-512, bt4
// +0.8..+5.4 %; at 4-32 even or slower (a tile is two positions), hence
// from 64 (BENCHMARKS.md, "The Q|K|V product and the attention in one launch").
constexpr int kQkvAttentionDefaultPositions = 64;

int qkv_attention_positions(const NetConfig& cfg) {
  if (cfg.dtype != DType::F16) return 0;
  const int from = std::max(0, env_int("LC0ROCM_QKV_ATTENTION", kQkvAttentionDefaultPositions));
  return from > 0 && attn::qkv_attention_sm90_prepare(cfg.device) ? from : 0;
}

// LC0ROCM_QKV_HALF_SUMS (on by default; 0: float sums): that launch's Q|K|V
// product sums in half, as lc0's cuda backend's cublasHgemm and our own
// sm_90 products (sm90_half_sums). H200, run 99, three rounds in turns
// beside those alone: t82 +1.2 / +0.4 %, bt4 +0.5 / +0.6 % at b256 / b512
// (ahead in 10 of 12); the parity errors as theirs (QKV_ATTENTION_SM90.md,
// "Kept: half sums").
bool qkv_half_sums() { return env_switch("LC0ROCM_QKV_HALF_SUMS", true); }

// LC0ROCM_WIDE_NORM_ROWS: batches of this size or more run smolgen's second
// layer norm (rows over 2,048 half values) a row to a block of 256 threads
// (attn::layer_norm's wide_from_rows); 0: never. H100, fp16: those layer
// norms' kernel time a pass t82 b512 -38 %, bt4 b512 -14 %; backendbench
// within its noise (BENCHMARKS.md, "Smolgen's wide layer norm").
int wide_norm_rows() { return std::max(0, env_int("LC0ROCM_WIDE_NORM_ROWS", attn::kWideNormDefaultRows)); }

// Whether a batch of n runs layer l's Q|K|V beside its smolgen chain (given
// a side lane: the stream makes one where the body asks for it).
bool runs_beside(const EncoderParams& p, const Encoder& l, int n) {
  return l.has_smolgen && n <= p.beside_positions;
}

// Whether a batch of n runs layer l's smolgen LN2 inside its generator.
bool runs_generate(const DeviceInfo& device, const EncoderParams& p, const Encoder& l, int n) {
  return l.has_smolgen && p.smolgen_global != nullptr && n <= p.generate_positions &&
         attn::smolgen_generate_fits(device, l.heads, l.smolgen.gen, p.smolgen_global->out);
}

bool runs_fused(const EncoderParams& p, const Encoder& l) {
  return p.fused && l.depth <= attn::kFusedMaxDepth;
}

// Whether a batch of n runs layer l's Q|K|V product and attention in one
// launch (qkv_attention_positions).
bool runs_qkv_attention(const EncoderParams& p, const Encoder& l, int n) {
  return p.qkv_attention_positions > 0 && n >= p.qkv_attention_positions && runs_fused(p, l) && p.tensor_cores &&
         p.mma_attention && !runs_beside(p, l, n) && attn::qkv_attention_sm90_fits(l.heads, l.depth, l.qkv.in);
}

// Whether a batch of n computes layer l's smolgen compress in its Q|K|V
// product (qkv_compress_positions).
bool runs_with_compress(const EncoderParams& p, const Encoder& l, int n) {
  return l.qkv_with_compress > 0 && p.compress_positions > 0 && n >= p.compress_positions && runs_fused(p, l) &&
         !runs_beside(p, l, n) && !runs_qkv_attention(p, l, n);
}

// The tensor-core fused attention where it applies (half storage, NVIDIA);
// false: the caller runs the scalar kernel.
bool run_tensor_core_attention(const EncoderParams& p, half* out, const half* qkv, int qkv_stride, const float* bias,
                               const half* gen, int n, int heads, int depth, const DeviceInfo& device,
                               hipStream_t stream) {
  return p.tensor_cores && attn::fused_attention_tensor_cores(out, qkv, qkv_stride, bias, gen, n, heads, depth,
                                                              device, p.mma_attention, stream);
}
bool run_tensor_core_attention(const EncoderParams&, float*, const float*, int, const float*, const float*,
                               int, int, int, const DeviceInfo&, hipStream_t) {
  return false;
}

// Layer L's Q|K|V product and its attention in one launch, x -> out (half,
// sm_90); false where it does not run (the caller then runs both).
bool run_qkv_attention(ForwardContext& ctx, const Encoder& L, const EncoderParams& p, int n, const half* x,
                       const half* gen, half* out) {
  const int w_rows = L.qkv_with_compress > 0 ? L.qkv_with_compress : 3 * L.d_model;
  return attn::qkv_attention_sm90(ctx.stream, ctx.device, out, x, static_cast<const half*>(L.qkv.w.get()), w_rows,
                                  f32(L.qkv.b), gen, n, L.heads, L.depth, L.qkv.in, p.qkv_half_sums);
}
bool run_qkv_attention(ForwardContext&, const Encoder&, const EncoderParams&, int, const float*, const float*, float*) {
  return false;
}

// Scratch for running encoder layers over n positions, taken once per pass
// and shared by all layers (sized for the widest).
template <typename T>
struct EncoderScratch {
  T* x1;        // [n*64][E] after the attention block
  T* qkv;       // [n*64][max(3*d_model + compressed channels, dff)], also the FFN hidden layer
  T* q;         // [n][H][64][depth], later softmax . V
  T* k;
  T* v;
  T* merged;    // [n*64][d_model]
  T* branch;    // [n*64][E]: mha dense output, then FFN output
  T* scores;    // [n*H][64][64]
  T* smolgen;   // [n*H][64][64]
  T* sg_small;  // [n*64][hidden channels] then smolgen's dense layers
  T* sg_small2;
  // Row statistics exchanged by gemm_sm90_layer_norm's blocks (kernels/
  // ops.h), prepared once a pass; null where no layer runs it.
  void* norm_exchange;
};

template <typename T>
EncoderScratch<T> take_scratch(Arena& arena, const std::vector<Encoder>& layers,
                               const EncoderParams& p, int n) {
  const long long rows = static_cast<long long>(n) * kSquares;
  long long e = 0, wide = 0, dm = 0, heads = 0, sg1 = 0, sg2 = 0;
  bool unfused = false;
  for (const Encoder& l : layers) {
    e = std::max<long long>(e, l.embedding);
    wide = std::max<long long>(wide, std::max(std::max(3 * l.d_model, l.qkv_with_compress), l.ffn.dense1.out));
    dm = std::max<long long>(dm, l.d_model);
    heads = std::max<long long>(heads, l.heads);
    unfused = unfused || !runs_fused(p, l);
    if (l.has_smolgen) {
      const Smolgen& g = l.smolgen;
      sg1 = std::max<long long>(sg1, std::max<long long>(rows * g.hidden_channels,
                                                         static_cast<long long>(n) * g.dense2.out));
      sg2 = std::max<long long>(sg2, (long long)n * g.dense1.out);
    }
  }
  EncoderScratch<T> s{};
  if (layers.empty()) return s;
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

// Attention of heads too deep for the fused kernel: split heads (bias added),
// Q.K^T and softmax . V as strided batched GEMMs over (position, head),
// softmax with smolgen's logits in between, heads merged into s.merged.
template <typename T>
void run_attention_unfused(ForwardContext& ctx, const Encoder& L, int n, const EncoderScratch<T>& s) {
  const int batch_heads = n * L.heads;
  hipStream_t stream = ctx.stream;
  attn::split_heads<T>(s.q, s.k, s.v, s.qkv, f32(L.qkv.b), n, L.heads, L.depth, stream);
  const long long head_stride = 64LL * L.depth;
  // scores = Q . K^T / sqrt(depth), one 64x64 product per (position, head).
  ctx.blas.gemm_strided_batched(ctx.dtype, false, true, 64, 64, L.depth, s.q, L.depth, head_stride,
                                s.k, L.depth, head_stride, s.scores, 64, 4096, batch_heads,
                                1.0f / std::sqrt(static_cast<float>(L.depth)));
  attn::softmax64<T>(s.scores, s.scores, L.has_smolgen ? s.smolgen : nullptr, batch_heads * 64,
                     ctx.device.warp_size, stream);
  // softmax . V into q's buffer (q is no longer needed).
  ctx.blas.gemm_strided_batched(ctx.dtype, false, false, 64, L.depth, 64, s.scores, 64, 4096, s.v,
                                L.depth, head_stride, s.q, L.depth, head_stride, batch_heads);
  attn::merge_heads<T>(s.merged, s.q, n, L.heads, L.depth, stream);
}

template <typename T>
void run_smolgen_from_compressed(ForwardContext& ctx, const Encoder& L, const EncoderParams& p, int n,
                                 const EncoderScratch<T>& s);

// Smolgen's per-position attention logit offsets, [n*H][64 query][64 key],
// into s.smolgen; reads x and writes only smolgen's own scratch.
// x_split: ctx's tf32 scratch holds x split (run_dense).
template <typename T>
void run_smolgen(ForwardContext& ctx, const Encoder& L, const EncoderParams& p, int n, const T* x,
                 const EncoderScratch<T>& s, bool x_split) {
  const long long rows = static_cast<long long>(n) * kSquares;
  const Smolgen& g = L.smolgen;
  run_dense(ctx, g.compress, rows, x, s.sg_small, x_split);        // [n][64*hc]
  run_smolgen_from_compressed<T>(ctx, L, p, n, s);
}

// Smolgen's chain from its compressed channels in s.sg_small ([n][64*hc])
// to the logit offsets in s.smolgen.
template <typename T>
void run_smolgen_from_compressed(ForwardContext& ctx, const Encoder& L, const EncoderParams& p, int n,
                                 const EncoderScratch<T>& s) {
  const Smolgen& g = L.smolgen;
  run_dense(ctx, g.dense1, n, s.sg_small, s.sg_small2);            // [n][hidden]
  attn::layer_norm<T>(s.sg_small2, s.sg_small2, f32(g.dense1.b), nullptr, f32(g.ln1.gammas),
                      f32(g.ln1.betas), n, g.dense1.out, 1.0f, kEpsHead, p.smolgen_act,
                      ctx.device.warp_size, ctx.stream);
  if constexpr (std::is_same<T, half>::value) {
    if (runs_generate(ctx.device, p, L, n)) {
      const Dense& global = *p.smolgen_global;
      run_dense_act(ctx, g.dense2, n, s.sg_small2, s.sg_small, p.smolgen_act);  // [n][H*gen]
      if (!attn::smolgen_generate(ctx.stream, ctx.device, n, L.heads, g.gen, s.sg_small, f32(g.ln2.gammas),
                                  f32(g.ln2.betas), kEpsHead, global.w.as<half>(), global.out, s.smolgen))
        fail(LC0ROCM_INTERNAL_ERROR, "smolgen_generate: buffers not aligned as planned");
      return;
    }
  }
  run_dense(ctx, g.dense2, n, s.sg_small2, s.sg_small);            // [n][H*gen]
  attn::layer_norm<T>(s.sg_small, s.sg_small, f32(g.dense2.b), nullptr, f32(g.ln2.gammas),
                      f32(g.ln2.betas), n, g.dense2.out, 1.0f, kEpsHead, p.smolgen_act,
                      ctx.device.warp_size, ctx.stream, p.wide_norm_rows);
  run_dense(ctx, *p.smolgen_global, static_cast<long long>(n) * L.heads, s.sg_small, s.smolgen);
}

// y = LN(alpha * (x . W^T + b) + skip) in one launch on
// gemm_sm90_layer_norm where the plan takes this many rows (half only; its
// exchange from the pass's scratch); false: the caller runs the product
// and layer_norm.
template <typename T>
bool run_fused_dense_norm(ForwardContext& ctx, const Dense& d, const Norm& norm, float alpha, float eps,
                          long long rows, const T* x, const T* skip, T* y, void* exchange, int launch) {
  if constexpr (std::is_same<T, half>::value) {
    return exchange != nullptr && takes_sm90_norm(d, rows) &&
           gemm_sm90_layer_norm(ctx.stream, ctx.device, rows, d.out, d.in, x, d.w.get(), f32(d.b), skip,
                                f32(norm.gammas), f32(norm.betas), alpha, eps, y, exchange, launch, d.sm90_half_sums);
  }
  return false;
}

// The same, fused where it can be, else the product into branch ([rows][out]
// scratch; null: taken from the arena) and layer_norm.
template <typename T>
void run_dense_norm(ForwardContext& ctx, const Dense& d, const Norm& norm, float alpha, float eps, long long rows,
                    const T* x, const T* skip, T* y, T* branch, void* exchange, int launch) {
  if (run_fused_dense_norm(ctx, d, norm, alpha, eps, rows, x, skip, y, exchange, launch)) return;
  if (branch == nullptr) branch = ctx.arena.take<T>(rows * d.out);
  run_dense(ctx, d, rows, x, branch);
  attn::layer_norm<T>(y, branch, f32(d.b), skip, f32(norm.gammas), f32(norm.betas), rows, d.out, alpha, eps,
                      Activation::None, ctx.device.warp_size, ctx.stream);
}

// An FFN block on x [rows][E] into y: dense1 and its activation into hidden
// ([rows][dense1.out]), then dense2 with the layer norm over x as the skip.
template <typename T>
void run_ffn(ForwardContext& ctx, const Ffn& f, float alpha, float eps, Activation act, long long rows, const T* x,
             T* hidden, T* y, T* branch, void* exchange, int launch) {
  run_dense_act(ctx, f.dense1, rows, x, hidden, act);
  run_dense_norm(ctx, f.dense2, f.ln, alpha, eps, rows, hidden, x, y, branch, exchange, launch);
}

// gemm_sm90_layer_norm's exchange of row statistics (kernels/ops.h), taken
// and reset once a pass where some product runs it; null otherwise.
void* take_norm_exchange(ForwardContext& ctx, bool needed) {
  if (!needed) return nullptr;
  void* exchange = ctx.arena.take(gemm_sm90_layer_norm_exchange_bytes());
  return gemm_sm90_layer_norm_reset(ctx.stream, exchange) ? exchange : nullptr;
}

bool layers_take_sm90_norm(const std::vector<Encoder>& layers, long long rows) {
  return std::any_of(layers.begin(), layers.end(), [&](const Encoder& l) {
    return takes_sm90_norm(l.out, rows) || takes_sm90_norm(l.ffn.dense2, rows);
  });
}

// One post-LN encoder layer on x [n*64][E], in place; `launch`: the number
// of its first layer norm's launch on the pass's exchange (the second's is
// one more).
template <typename T>
void run_encoder(ForwardContext& ctx, const Encoder& L, const EncoderParams& p, int n, T* x,
                 const EncoderScratch<T>& s, int launch) {
  const long long rows = static_cast<long long>(n) * kSquares;
  hipStream_t stream = ctx.stream;

  int qkv_stride = 3 * L.d_model;
  bool attended = false;  // the attention's output is in s.merged
  if (runs_qkv_attention(p, L, n)) {
    // Smolgen's chain first: the one launch reads its logits.
    if (L.has_smolgen) run_smolgen<T>(ctx, L, p, n, x, s, false);
    attended = run_qkv_attention(ctx, L, p, n, x, L.has_smolgen ? s.smolgen : nullptr, s.merged);
    if (!attended) run_dense(ctx, L.qkv, rows, x, s.qkv);
  } else if (ctx.side != nullptr && runs_beside(p, L, n)) {
    // Two branches that only read x: Q|K|V on the side lane, smolgen here.
    ForwardContext side = fork_side(ctx);
    run_dense(side, L.qkv, rows, x, s.qkv);
    run_smolgen<T>(ctx, L, p, n, x, s, false);
    join_side(ctx);
  } else if (runs_with_compress(p, L, n)) {
    // Q|K|V and smolgen's compressed channels in one product; the channels
    // gathered into dense1's rows ([n][64 * hc]).
    qkv_stride = L.qkv_with_compress;
    const int channels = L.smolgen.hidden_channels;
    ctx.blas.gemm(ctx.dtype, false, true, static_cast<int>(rows), qkv_stride, L.qkv.in, x, L.qkv.in, L.qkv.w.get(),
                  L.qkv.in, s.qkv, qkv_stride);
    if (!copy_rows(stream, rows, channels * sizeof(T), s.qkv + 3 * L.d_model, qkv_stride * sizeof(T), s.sg_small,
                   channels * sizeof(T)))
      fail(LC0ROCM_INTERNAL_ERROR, "copy_rows: Q|K|V rows not aligned as planned");
    run_smolgen_from_compressed<T>(ctx, L, p, n, s);
  } else if (L.has_smolgen && p.smolgen_first_positions > 0 && n >= p.smolgen_first_positions) {
    run_smolgen<T>(ctx, L, p, n, x, s, false);
    run_dense(ctx, L.qkv, rows, x, s.qkv);
  } else {
    // Q|K|V before smolgen: a float net's split of x then serves smolgen's
    // compress product too (both read x over the embedding width).
    const bool x_split = run_dense(ctx, L.qkv, rows, x, s.qkv);
    if (L.has_smolgen) run_smolgen<T>(ctx, L, p, n, x, s, x_split && L.smolgen.compress.in == L.qkv.in);
  }
  if (!attended && runs_fused(p, L)) {
    const T* gen = L.has_smolgen ? s.smolgen : nullptr;
    if (!run_tensor_core_attention(p, s.merged, s.qkv, qkv_stride, f32(L.qkv.b), gen, n, L.heads, L.depth,
                                   ctx.device, stream))
      attn::fused_attention<T>(s.merged, s.qkv, qkv_stride, f32(L.qkv.b), gen, n, L.heads, L.depth,
                               ctx.device.warp_size, stream);
  } else if (!attended) {
    run_attention_unfused<T>(ctx, L, n, s);
  }
  run_dense_norm(ctx, L.out, L.ln1, p.alpha, p.eps, rows, s.merged, x, s.x1, s.branch,
                 s.norm_exchange, launch);
  run_ffn(ctx, L.ffn, p.alpha, p.eps, p.ffn_act, rows, s.x1, s.qkv, x, s.branch, s.norm_exchange, launch + 1);
}

template <typename T>
void run_encoders(ForwardContext& ctx, const std::vector<Encoder>& layers, const EncoderParams& p,
                  int n, T* x, void* norm_exchange, int first_launch) {
  if (layers.empty()) return;
  EncoderScratch<T> s = take_scratch<T>(ctx.arena, layers, p, n);
  s.norm_exchange = norm_exchange;
  // Q|K|V beside smolgen only in a captured pass: plain passes (a size's
  // first, or all with LC0ROCM_NO_GRAPHS=1) run in series, as they measured
  // faster so, and later passes of other sizes in the process were slower
  // after plain ones that forked (native/SIDE_LANE.md).
  EncoderParams q = p;
  if (q.beside_positions > 0 && (ctx.side == nullptr || !gpu_stream_capturing(ctx.stream))) q.beside_positions = 0;
  for (size_t i = 0; i < layers.size(); ++i)
    run_encoder<T>(ctx, layers[i], q, n, x, s, first_launch + 2 * static_cast<int>(i));
}

// ------------------------------------------------------------------ policy

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

class AttentionPolicy final : public PolicyHead {
 public:
  AttentionPolicy(const NetConfig& cfg, const WeightStore& ws, const std::string& prefix, int channels,
                  Activation embed_act, Activation smolgen_act, Activation ffn_act,
                  const Dense* smolgen_global)
      : dtype_(cfg.dtype), embed_act_(embed_act) {
    embed_ = load_dense(ws, dtype_, prefix + "ip_pol_w", prefix + "ip_pol_b", channels);
    const Sm90Settings sm90 = sm90_settings(cfg);
    plan_sm90_product(embed_, sm90);  // its activation in the product's epilogue
    const int width = embed_.out;
    encoders_ = load_encoders(ws, dtype_, prefix + "pol_encoder.", width,
                              load_count(ws, prefix, "pol_headcount"),
                              smolgen_global ? smolgen_global->in : 0);
    params_ = EncoderParams{1.0f, kEpsDefault, smolgen_act, ffn_act, smolgen_global,
                            fused_attention_enabled(), tensor_core_attention_enabled(), mma_attention_enabled(),
                            smolgen_generate_positions(cfg), 0, 0, qkv_compress_positions(cfg), wide_norm_rows(),
                            0};
    // Query and key in one GEMM: [2d][width] weights, output rows q | k.
    const auto& qb = ws.floats(prefix + "ip2_pol_b");
    d_ = static_cast<int>(qb.size());
    if (d_ == 0) fail(LC0ROCM_INVALID_ARGUMENT, "attention net: " + prefix + "ip2_pol_b is empty");
    const long long count = static_cast<long long>(d_) * width;
    qk_.in = width;
    qk_.out = 2 * d_;
    qk_.w = upload_floats(concat({&ws.floats(prefix + "ip2_pol_w", count),
                                  &ws.floats(prefix + "ip3_pol_w", count)}),
                          dtype_);
    qk_.b = upload_floats(concat({&qb, &ws.floats(prefix + "ip3_pol_b", d_)}), DType::F32);
    plan_sm90_product(qk_, sm90);  // its bias in the product's epilogue
    promotion_ = ws.upload_f32(prefix + "ip4_pol_w", 4LL * d_);
    std::vector<int32_t> slots = make_policy_slots();
    if (slots.size() != static_cast<size_t>(attn::kPolicySize))
      fail(LC0ROCM_INTERNAL_ERROR, "attention policy map has " + std::to_string(slots.size()) + " moves");
    // The map native.py sends comes from lc0_rocm.tables; both follow the rules.
    if (ws.has("map.attention_policy_gather") &&
        ws.ints("map.attention_policy_gather", attn::kPolicySize) != slots)
      fail(LC0ROCM_INTERNAL_ERROR, "attention policy map differs from the one generated here");
    slots_ = DeviceBuffer(slots.size() * sizeof(int32_t));
    GPU_CHECK(hipMemcpy(slots_.get(), slots.data(), slots_.bytes(), hipMemcpyHostToDevice));
    Tf32Splitter splitter(cfg);
    splitter.split(embed_, kSquares);
    splitter.split(encoders_);
    splitter.split(qk_, kSquares);
    tf32_floats_per_position_ = splitter.floats_per_position();
  }

  void forward(ForwardContext& ctx, int n, const void* x, float* policy) const override {
    if (dtype_ == DType::F32) run<float>(ctx, n, x, policy);
    else run<half>(ctx, n, x, policy);
  }

 private:
  template <typename T>
  void run(ForwardContext& ctx, int n, const void* x, float* policy) const {
    const long long rows = static_cast<long long>(n) * kSquares;
    reserve_tf32_scratch(ctx, tf32_floats_per_position_, n);
    T* flow = ctx.arena.take<T>(rows * embed_.out);
    run_dense_act(ctx, embed_, rows, x, flow, embed_act_);
    run_encoders<T>(ctx, encoders_, params_, n, flow, take_norm_exchange(ctx, layers_take_sm90_norm(encoders_, rows)),
                    0);
    T* qk = ctx.arena.take<T>(rows * 2 * d_);
    run_dense_act(ctx, qk_, rows, flow, qk, Activation::None);
    T* logits = ctx.arena.take<T>(static_cast<long long>(n) * 4096);
    const long long stride = 64LL * 2 * d_;
    ctx.blas.gemm_strided_batched(ctx.dtype, false, true, 64, 64, d_, qk, 2 * d_, stride, qk + d_, 2 * d_,
                                  stride, logits, 64, 4096, n, 1.0f / std::sqrt(static_cast<float>(d_)));
    attn::attention_policy_output<T>(policy, logits, qk + d_, 2 * d_, f32(promotion_),
                                     slots_.as<int32_t>(), n, d_, ctx.stream);
  }

  DType dtype_;
  Activation embed_act_;
  Dense embed_, qk_;
  std::vector<Encoder> encoders_;
  EncoderParams params_{};
  DeviceBuffer promotion_, slots_;
  int d_ = 0;
  size_t tf32_floats_per_position_ = 0;  // Tf32Splitter's
};

// ------------------------------------------------------------------ value / moves left

// Per-square embedding, flatten square-major, dense + act, dense to outputs.
struct FlatHead {
  Dense embed, dense1, dense2;

  void load(const WeightStore& ws, DType dt, const std::string& embed_name, const std::string& d1,
            const std::string& d2, int channels) {
    embed = load_dense(ws, dt, embed_name + "_w", embed_name + "_b", channels);
    dense1 = load_dense(ws, dt, d1 + "_w", d1 + "_b", kSquares * embed.out);
    dense2 = load_dense(ws, dt, d2 + "_w", d2 + "_b", dense1.out);
  }

  void split(Tf32Splitter& splitter) {
    splitter.split(embed, kSquares);
    splitter.split(dense1, 1);
    splitter.split(dense2, 1);
  }

  // dense1's outputs [n][dense1.out]: dense2's input.
  template <typename T>
  T* hidden(ForwardContext& ctx, int n, const T* flow, Activation act) const {
    const long long rows = static_cast<long long>(n) * kSquares;
    T* e = ctx.arena.take<T>(rows * embed.out);
    run_dense_act(ctx, embed, rows, flow, e, act);
    T* h = ctx.arena.take<T>(static_cast<long long>(n) * dense1.out);
    run_dense_act(ctx, dense1, n, e, h, act);
    return h;
  }

  // Raw outputs [n][dense2.out] (bias added, no activation).
  template <typename T>
  T* run(ForwardContext& ctx, int n, const T* flow, Activation act) const {
    T* out = ctx.arena.take<T>(static_cast<long long>(n) * dense2.out);
    run_dense_act(ctx, dense2, n, hidden<T>(ctx, n, flow, act), out, Activation::None);
    return out;
  }

  // As a value head: (win, draw, loss) [n][3] into wdl; dense2 and the
  // output in one launch where value_head_tail takes it (`tail`).
  template <typename T>
  void run_value(ForwardContext& ctx, int n, const T* flow, Activation act, bool wdl_outputs, bool tail,
                 float* wdl) const {
    const T* h = hidden<T>(ctx, n, flow, act);
    if (tail && value_head_tail(ctx.stream, ctx.dtype, n, dense2.in, dense2.out, h, dense2.w.get(),
                                /*w_by_output=*/true, f32(dense2.b), wdl))
      return;
    T* logits = ctx.arena.take<T>(static_cast<long long>(n) * dense2.out);
    run_dense_act(ctx, dense2, n, h, logits, Activation::None);
    value_output(ctx.stream, ctx.dtype, n, logits, wdl_outputs, wdl);
  }
};

// ------------------------------------------------------------------ body

// [channels][64] -> [64][channels].
std::vector<float> square_major(const std::vector<float>& by_channel, int channels) {
  std::vector<float> out(by_channel.size());
  for (int c = 0; c < channels; ++c)
    for (int sq = 0; sq < kSquares; ++sq) out[sq * channels + c] = by_channel[c * kSquares + sq];
  return out;
}

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
      mult_gate_ = upload_floats(square_major(ws.floats("ip_mult_gate", 64LL * e), e), DType::F32);
      add_gate_ = upload_floats(square_major(ws.floats("ip_add_gate", 64LL * e), e), DType::F32);
    }
    if (ws.has("smolgen_w")) {
      const size_t count = ws.count("smolgen_w");
      if (count % 4096)
        fail(LC0ROCM_INVALID_ARGUMENT, "attention net: smolgen_w has " + std::to_string(count) +
                                           " weights, not a multiple of 64 x 64");
      smolgen_global_ = load_dense(ws, dt, "smolgen_w", "", static_cast<int>(count / 4096));
    }
    const Dense* global = ws.has("smolgen_w") ? &smolgen_global_ : nullptr;
    encoders_ = load_encoders(ws, dt, "encoder.", e, load_count(ws, "", "headcount"),
                              global ? global->in : 0);
    if (pe_dense_) {
      embed_ln_ = load_norm(ws, "ip_emb_ln_", e);
      embed_ffn_ = load_ffn(ws, dt, "ip_emb_ffn.", "ip_emb_ffn_ln_", e);
    }
    Ffn* embedding_ffn = pe_dense_ ? &embed_ffn_ : nullptr;
    sm90_plan_ = plan_sm90_products(encoders_, embedding_ffn, cfg);
    plan_sm90_layer_norms(encoders_, embedding_ffn, cfg);
    const float alpha =
        encoders_.empty() ? 1.0f : static_cast<float>(std::pow(2.0 * encoders_.size(), -0.25));
    params_ = EncoderParams{alpha, pe_dense_ ? kEpsPeDense : kEpsDefault, cfg.smolgen_act, cfg.ffn_act,
                            global, fused_attention_enabled(), tensor_core_attention_enabled(),
                            mma_attention_enabled(), smolgen_generate_positions(cfg),
                            smolgen_beside_positions(cfg), smolgen_first_positions(cfg),
                            qkv_compress_positions(cfg), wide_norm_rows(), qkv_attention_positions(cfg),
                            qkv_half_sums()};

    policy_ = std::make_unique<AttentionPolicy>(cfg, ws, "policy_head.", e, cfg.default_act,
                                                cfg.smolgen_act, cfg.ffn_act, global);
    value_.load(ws, dt, "value_head.ip_val", "value_head.ip1_val", "value_head.ip2_val", e);
    const int value_outputs = cfg.value == kValueWdl ? 3 : 1;
    if (value_.dense2.out != value_outputs)
      fail(LC0ROCM_INVALID_ARGUMENT, "attention net: value_head.ip2_val has " +
                                         std::to_string(value_.dense2.out) + " outputs, expected " +
                                         std::to_string(value_outputs));
    if (cfg.moves_left) {
      moves_left_.load(ws, dt, "ip_mov", "ip1_mov", "ip2_mov", e);
      if (moves_left_.dense2.out != 1)
        fail(LC0ROCM_INVALID_ARGUMENT, "attention net: ip2_mov has " +
                                           std::to_string(moves_left_.dense2.out) + " outputs, expected 1");
    }
    Tf32Splitter splitter(cfg);
    if (pe_dense_) {
      splitter.split(preproc_, 1);
      splitter.split(embed_ffn_.dense1, kSquares);
      splitter.split(embed_ffn_.dense2, kSquares);
    }
    splitter.split(embed_, kSquares);
    splitter.split(encoders_);
    if (global && !encoders_.empty()) splitter.split(smolgen_global_, encoders_.front().heads);
    value_.split(splitter);
    if (cfg.moves_left) moves_left_.split(splitter);
    gemv_max_rows_ =
        cfg.dtype == DType::F16 ? std::clamp(env_int("LC0ROCM_GEMV_ROWS", kGemvDefaultRows), 0, kGemvMaxRows) : 0;
    tf32_floats_per_position_ = splitter.floats_per_position();
    tf32_from_rows_ = splitter.from_rows();
    side_lane_ = params_.beside_positions > 0 &&
                 std::any_of(encoders_.begin(), encoders_.end(), [](const Encoder& l) { return l.has_smolgen; });
  }

  void forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const override {
    if (ctx.dtype == DType::F32) run<float>(ctx, n, static_cast<const float*>(planes), out);
    else run<half>(ctx, n, static_cast<const half*>(planes), out);
  }

  // Q|K|V beside smolgen's chain at some batch size: the stream makes a side lane.
  bool uses_side_lane() const override { return side_lane_; }
  // Dependent launches where Q|K|V runs beside smolgen: together they gain
  // (t82 b1 +13..15 %, bt4 +9..14 % on an H100), each alone does not
  // (native/SIDE_LANE.md). Elsewhere our kernels sit between cuBLAS GEMMs
  // (t82 measured -6..-8 % at b16 with them, bt4 even).
  bool uses_dependent_launch(int n) const override { return side_lane_ && n <= params_.beside_positions; }

  std::string describe(int n) const override {
    return "attention body, " + std::to_string(encoders_.size()) + " encoder layers of " + std::to_string(embedding_) +
           (pe_dense_ ? ", PE_DENSE embedding" : "") + smolgen_path(n) + qkv_attention_path(n) +
           tf32_path(tf32_floats_per_position_ ? tf32_from_rows_ : 0) + sm90_path(sm90_plan_, n) +
           sm90_norm_path(encoders_, n) +
           (n <= gemv_max_rows_ ? ", per-position layers on gemv_rows" : "");
  }

 private:
  template <typename T>
  void run(ForwardContext& ctx, int n, const T* planes, NetOutputs out) const {
    if (n == 0) return;
    ctx.gemv_max_rows = gemv_max_rows_;
    reserve_tf32_scratch(ctx, tf32_floats_per_position_, n);
    const long long rows = static_cast<long long>(n) * kSquares;
    T* flow = ctx.arena.take<T>(rows * embedding_);
    // Launch 0 on the exchange: the embedding's FFN; 1 on: the encoders'.
    void* exchange = take_norm_exchange(
        ctx, layers_take_sm90_norm(encoders_, rows) || (pe_dense_ && takes_sm90_norm(embed_ffn_.dense2, rows)));
    embed<T>(ctx, n, planes, flow, exchange);
    run_encoders<T>(ctx, encoders_, params_, n, flow, exchange, 1);
    // All on one stream: the value head on the side lane, beside the policy
    // head, measured -1..-6 % on t82 and bt4 at batches 1-64 (H100), and so
    // did smolgen beside Q|K|V (-1..-3 % at 16-256); native/SIDE_LANE.md.
    policy_->forward(ctx, n, flow, out.policy);
    value_.run_value<T>(ctx, n, flow, cfg_.default_act, cfg_.value == kValueWdl, value_tail_, out.wdl);
    if (cfg_.moves_left) {
      const T* m = moves_left_.run<T>(ctx, n, flow, cfg_.default_act);
      cast_to_float(ctx.stream, ctx.dtype, n, m, out.moves_left, Activation::Relu);
    }
  }

  // Whether a batch of n runs any layer's Q|K|V and attention in one launch.
  std::string qkv_attention_path(int n) const {
    const bool any = std::any_of(encoders_.begin(), encoders_.end(),
                                 [&](const Encoder& l) { return runs_qkv_attention(params_, l, n); });
    if (!any) return "";
    return params_.qkv_half_sums ? ", Q|K|V with the attention in one launch (sm_90, half sums)"
                                 : ", Q|K|V with the attention in one launch (sm_90)";
  }

  // How smolgen's chain runs at batch n ("" without smolgen).
  std::string smolgen_path(int n) const {
    for (const Encoder& l : encoders_) {
      if (!l.has_smolgen) continue;
      const std::string beside = runs_beside(params_, l, n) ? ", beside Q|K|V" : "";
      return std::string(", smolgen a layer at a time") +
             (runs_with_compress(params_, l, n) ? ", its compress in the Q|K|V product" : "") +
             (runs_generate(cfg_.device, params_, l, n) ? ", its second layer norm in the generator" : "") + beside;
    }
    return "";
  }

  // Input planes [n][64][112] -> flow [n*64][embedding]; norm_exchange:
  // the pass's (launch 0 is the FFN's).
  template <typename T>
  void embed(ForwardContext& ctx, int n, const T* planes, T* flow, void* norm_exchange) const {
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
      run_dense(ctx, preproc_, n, pieces, pre);
      attn::pe_dense_input<T>(input, planes, pre, f32(preproc_.b), n, pre_size_, stream);
      run_dense(ctx, embed_, rows, input, embedded);
      attn::layer_norm<T>(embedded, embedded, f32(embed_.b), nullptr, f32(embed_ln_.gammas),
                          f32(embed_ln_.betas), rows, embedding_, 1.0f, kEpsHead, cfg_.default_act,
                          ctx.device.warp_size, stream);
      if (has_gating_)
        attn::input_gating<T>(embedded, nullptr, Activation::None, f32(mult_gate_), f32(add_gate_), n,
                              embedding_, stream);
      T* hidden = ctx.arena.take<T>(rows * embed_ffn_.dense1.out);
      run_ffn<T>(ctx, embed_ffn_, params_.alpha, kEpsHead, cfg_.ffn_act, rows, embedded, hidden, flow, nullptr,
                 norm_exchange, 0);
    } else if (has_gating_) {
      // The product's bias and activation go to the gating's pass.
      attn::pe_map_input<T>(input, planes, n, stream);
      run_dense(ctx, embed_, rows, input, flow);
      attn::input_gating<T>(flow, f32(embed_.b), cfg_.default_act, f32(mult_gate_), f32(add_gate_), n, embedding_,
                            stream);
    } else {
      attn::pe_map_input<T>(input, planes, n, stream);
      run_dense_act(ctx, embed_, rows, input, flow, cfg_.default_act);
    }
  }

  NetConfig cfg_;
  bool pe_dense_ = false, has_gating_ = false;
  int pre_size_ = 0, embedding_ = 0;
  Dense preproc_, embed_, smolgen_global_;
  Norm embed_ln_;
  Ffn embed_ffn_;  // PE_DENSE only
  DeviceBuffer mult_gate_, add_gate_;
  std::vector<Encoder> encoders_;
  EncoderParams params_{};
  std::unique_ptr<AttentionPolicy> policy_;
  FlatHead value_, moves_left_;
  bool value_tail_ = value_tail_wanted();  // read when the network is created
  size_t tf32_floats_per_position_ = 0;  // Tf32Splitter's
  // LC0ROCM_GEMV_ROWS: passes of up to this many positions (half nets) run
  // their layers of as many rows on gemv_rows (native/GEMV_ROWS.md); 0: never.
  int gemv_max_rows_ = 0;
  int tf32_from_rows_ = 0;
  bool side_lane_ = false;  // some layer runs Q|K|V beside smolgen at some batch size (set once)
  Sm90Plan sm90_plan_;  // which products run on our sm_90 one
};

std::unique_ptr<Body> make_body(const NetConfig& config, const WeightStore& weights) {
  return std::make_unique<AttentionBody>(config, weights);
}

std::unique_ptr<PolicyHead> make_policy(const NetConfig& config, const WeightStore& weights,
                                        const std::string& prefix, int channels, Activation act) {
  return make_attention_policy_head(config, weights, prefix, channels, act);
}

const BodyRegistrar body_registrar("attention", &make_body);
const PolicyHeadRegistrar policy_registrar("attention", &make_policy);

}  // namespace

std::unique_ptr<Body> make_attention_body(const NetConfig& config, const WeightStore& weights) {
  return make_body(config, weights);
}

// On a convolution body (lc0's T79-style nets) the policy encoders use the
// embedding activation in their FFN and no smolgen activation, like the
// numpy reference.
std::unique_ptr<PolicyHead> make_attention_policy_head(const NetConfig& config,
                                                       const WeightStore& weights,
                                                       const std::string& prefix, int channels,
                                                       Activation act) {
  return std::make_unique<AttentionPolicy>(config, weights, prefix, channels, act, Activation::None, act,
                                           nullptr);
}

std::vector<int32_t> attention_policy_slots() { return make_policy_slots(); }

}  // namespace lc0rocm
