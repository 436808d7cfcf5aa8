// attention/layers.h - the attention nets' dense layers and layer norms on
// the device, and how a dense layer's product runs (the route the plan gave
// it: plan/attention_plan.h).
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "../body.h"
#include "../plan/attention_plan.h"

namespace lc0rocm {
namespace attention {

constexpr float kEpsPeDense = 1e-3f;
constexpr float kEpsDefault = 1e-6f;
constexpr float kEpsHead = 1e-3f;  // embedding and smolgen layer norms

// A dense layer y = x . W^T + b with lc0's [out][in] weights in the net's
// storage type and float32 biases (absent for compress / smolgen_w).
struct Dense {
  DeviceBuffer w, b;
  int in = 0, out = 0;
  DenseRoute route;  // where its product may run (set by route())
  // Float nets on tf32 tensor cores: the weights split head | rest | head
  // ([out][3*in], kernels/tf32_split.hip).
  DeviceBuffer w3;

  DenseShape shape() const { return DenseShape{in, out}; }
  const float* bias() const { return b.as<float>(); }
};

// Layer-norm gammas and betas, float32.
struct Norm {
  DeviceBuffer gammas, betas;
};

Dense load_dense(const WeightStore& ws, DType dt, const std::string& w_name, const std::string& b_name, int in);
Norm load_norm(const WeightStore& ws, const std::string& prefix, int width);
// A head count: the 1-element tensor "meta." + name (native.py's name) or
// prefix + name; 0 when absent.
int load_count(const WeightStore& ws, const std::string& prefix, const std::string& name);
// [channels][64] -> [64][channels].
std::vector<float> square_major(const std::vector<float>& by_channel, int channels);

// Splits float dense weights for tf32 products where their route says so,
// and keeps the largest split input one position brings, which sizes the
// scratch of a pass.
class Tf32Splitter {
 public:
  // d runs on rows_per_position rows per position.
  void split(Dense& d, int rows_per_position);
  size_t floats_per_position() const { return floats_per_position_; }

 private:
  size_t floats_per_position_ = 0;
};

// Scratch for the split inputs of a pass of n positions (nothing where the
// net splits nothing or ctx already has enough).
void reserve_tf32_scratch(ForwardContext& ctx, size_t floats_per_position, int n);

// One forward pass of an attention net: the stream's context and the net's
// rules (plan/attention_plan.h), which the dense layers' products follow.
struct Pass {
  ForwardContext& ctx;
  const AttentionRules& rules;
};

// y [rows][out] = x [rows][in] . W^T (bias not added). Returns whether it
// ran as a split tf32 product, leaving x split in ctx's scratch for a next
// product of the same x (x_split there).
bool run_dense(Pass& pass, const Dense& d, long long rows, const void* x, void* y, bool x_split = false);
// y = act(x . W^T + b).
void run_dense_act(Pass& pass, const Dense& d, long long rows, const void* x, void* y, Activation act);

}  // namespace attention
}  // namespace lc0rocm
