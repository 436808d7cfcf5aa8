// attention/heads.h - the attention policy head and the flat value and
// moves-left heads of attention nets.
#pragma once
#include <string>
#include <vector>

#include "encoder.h"

namespace lc0rocm {
namespace attention {

// Slot of each of lc0's 1858 policy moves in the attention policy block
// (attention.h says which).
std::vector<int32_t> make_policy_slots();

// Per-square embedding, its encoders, query | key in one product, the
// scaled logits gathered into lc0's 1858 moves with the promotions.
class AttentionPolicy {
 public:
  AttentionPolicy(const NetConfig& cfg, const WeightStore& ws, const std::string& prefix, int channels,
                  Activation embed_act, Activation smolgen_act, Activation ffn_act, const Dense* smolgen_global);
  // Its shapes into the plan's description of the net.
  void describe_into(AttentionNet& net) const;
  // Routes its products (the plan's dense_route), splits float weights for tf32.
  void route(const AttentionRules& rules);
  // x [n][64][channels] -> policy [n][1858] logits; plans: its encoders'.
  void eval(Pass& pass, const std::vector<EncoderPlan>& plans, int n, const void* x, float* policy) const;

 private:
  template <typename T>
  void run(Pass& pass, const std::vector<EncoderPlan>& plans, int n, const void* x, float* policy) const;

  DType dtype_;
  Activation embed_act_;
  Dense embed_, qk_;
  EncoderStack encoders_;
  DeviceBuffer promotion_, slots_;
  int d_ = 0;
  size_t tf32_floats_per_position_ = 0;  // Tf32Splitter's
};

// Per-square embedding, flatten square-major, dense + act, dense to outputs:
// the value and moves-left heads.
struct FlatHead {
  Dense embed, dense1, dense2;

  void load(const WeightStore& ws, DType dt, const std::string& embed_name, const std::string& d1,
            const std::string& d2, int channels);
  void route(const AttentionRules& rules, Tf32Splitter& splitter);
  // Raw outputs [n][dense2.out] (bias added, no activation).
  template <typename T>
  T* run(Pass& pass, int n, const T* flow, Activation act) const;
  // As a value head: (win, draw, loss) [n][3] into wdl; dense2 and the
  // output in one launch where value_head_tail takes it (`tail`).
  template <typename T>
  void run_value(Pass& pass, int n, const T* flow, Activation act, bool wdl_outputs, bool tail, float* wdl) const;

 private:
  template <typename T>
  T* hidden(Pass& pass, int n, const T* flow, Activation act) const;
};

// The sm_90 kernels prepared for cfg's device where a half net may run them
// (at network creation, outside a capture): plan/attention_plan.h.
Sm90Facts prepare_sm90_kernels(const NetConfig& cfg, bool body_encoders);

}  // namespace attention
}  // namespace lc0rocm
