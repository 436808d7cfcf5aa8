// attention/encoder.h - post-LN encoder layers (smolgen included): each
// layer an object that loads its weights and runs as its plan says
// (plan/attention_plan.h's EncoderPlan), the stack of them with the
// scratch they share.
#pragma once
#include <string>
#include <vector>

#include "layers.h"

namespace lc0rocm {
namespace attention {

// Smolgen: per-position attention logit offsets from the layer's input.
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
Ffn load_ffn(const WeightStore& ws, DType dt, const std::string& weights, const std::string& norm, int embedding);

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

// What every layer of a stack shares.
struct EncoderConstants {
  float alpha = 1.0f, eps = kEpsDefault;
  Activation smolgen_act = Activation::Swish, ffn_act = Activation::Relu;
  const Dense* smolgen_global = nullptr;  // [4096][gen], shared by all layers; null without smolgen
};

class EncoderLayer {
 public:
  // Tensors under prefix (attention.h); smolgen_gen_width: the shared
  // generator's inputs a head (0 without one).
  EncoderLayer(const WeightStore& ws, DType dt, const std::string& prefix, int embedding, int heads,
               int smolgen_gen_width);

  EncoderShape shape() const;
  // Routes its products (plan's dense_route), splits float weights for tf32.
  void route(const AttentionRules& rules, bool body, Tf32Splitter& splitter);

  // The layer on x [n*64][E], in place, as plan says; `launch`: the number
  // of its first layer norm's launch on the pass's exchange (the second's
  // is one more).
  template <typename T>
  void eval(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n, T* x,
            const EncoderScratch<T>& s, int launch) const;

 private:
  friend class EncoderStack;  // sizes the scratch the layers share

  template <typename T>
  void attend(Pass& pass, const EncoderPlan& plan, int n, int qkv_stride, const EncoderScratch<T>& s) const;
  template <typename T>
  void run_smolgen(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n, const T* x,
                   const EncoderScratch<T>& s, bool x_split) const;
  template <typename T>
  void run_smolgen_from_compressed(Pass& pass, const EncoderConstants& c, const EncoderPlan& plan, int n,
                                   const EncoderScratch<T>& s) const;

  int scratch_width() const;  // the qkv scratch's columns

  int embedding_ = 0, d_model_ = 0, depth_ = 0, heads_ = 0;
  bool has_smolgen_ = false;
  Smolgen smolgen_;
  Dense qkv_;  // q, k, v stacked: [3 * d_model][embedding]
  Dense out_;  // mha dense
  Norm ln1_;   // after the attention's output product
  Ffn ffn_;
  // Half nets with smolgen: qkv_.w's rows, smolgen's compress weights
  // stacked after Q|K|V's (one product reads x for both); 0: Q|K|V's alone.
  int qkv_with_compress_ = 0;
  EncoderShape shape_;
};

// y = LN(alpha * (x . W^T + b) + skip), the product fused with its layer
// norm where the plan takes it there (fused: on gemm_sm90_layer_norm, with
// the pass's exchange), else the product into branch ([rows][out]
// scratch; null: taken from the arena) and layer_norm.
template <typename T>
void run_dense_norm(Pass& pass, const Dense& d, const Norm& norm, float alpha, float eps, long long rows, const T* x,
                    const T* skip, T* y, T* branch, bool fused, void* exchange, int launch);
// An FFN block on x [rows][E] into y: dense1 and its activation into hidden
// ([rows][dense1.out]), then dense2 with the layer norm over x as the skip.
template <typename T>
void run_ffn(Pass& pass, const Ffn& f, float alpha, float eps, Activation act, long long rows, const T* x, T* hidden,
             T* y, T* branch, bool fused_norm, void* exchange, int launch);
// gemm_sm90_layer_norm's exchange of row statistics (kernels/ops.h), taken
// and reset once a pass where some product runs it; null otherwise.
void* take_norm_exchange(ForwardContext& ctx, bool needed);

// The encoder layers of a body or policy head.
class EncoderStack {
 public:
  EncoderStack() = default;
  // Layers prefix.0., prefix.1., ... while they exist.
  EncoderStack(const WeightStore& ws, DType dt, const std::string& prefix, int embedding, int heads,
               const Dense* smolgen_global);
  std::vector<EncoderShape> shapes() const;
  void route(const AttentionRules& rules, bool body, Tf32Splitter& splitter);
  bool empty() const { return layers_.empty(); }
  size_t size() const { return layers_.size(); }
  EncoderConstants& constants() { return constants_; }
  const EncoderConstants& constants() const { return constants_; }

  // Every layer on x [n*64][E], in place, as plans says (one per layer);
  // exchange: the pass's for gemm_sm90_layer_norm (null: none), whose
  // launches this stack numbers from first_launch.
  template <typename T>
  void eval(Pass& pass, const std::vector<EncoderPlan>& plans, int n, T* x, void* exchange, int first_launch) const;

 private:
  template <typename T>
  EncoderScratch<T> take_scratch(Arena& arena, const std::vector<EncoderPlan>& plans, int n) const;

  std::vector<EncoderLayer> layers_;
  EncoderConstants constants_;
};

}  // namespace attention
}  // namespace lc0rocm
