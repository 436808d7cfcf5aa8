// body.h - how a network body plugs into the native library (stable interface).
//
// network.cpp turns an lc0rocm_config + named tensors into one Body, picked
// by kind from a registry: "resnet" (convolution bodies, resnet.cpp) and
// "attention" (attention bodies, attention/). A body owns its weights on
// the device (uploaded from the WeightStore in its factory) and runs the
// whole net: body, policy head, value head and moves-left head.
//
// Layouts (all row-major, storage type = ctx.dtype, float or half):
//   input planes : [n][64][112]   square-major (square a1 = 0 .. h8 = 63,
//                                 side-to-move frame), written by network.cpp
//   activations  : [n][64][C]     square-major ("NHWC"); a 1x1 convolution or a
//                                 per-square dense layer is one GEMM of
//                                 (n*64) x C by a [out][C] weight.
//   outputs      : float32, device: policy [n][1858] raw logits in lc0 order,
//                  wdl [n][3] probabilities, moves_left [n] (plies).
// A body must write every element of policy and wdl, and of moves_left when
// config.moves_left != 0 (otherwise network.cpp zeroes the caller's block on
// the host and the device buffer is left alone).
#pragma once
#include <memory>
#include <string>

#include "gpu_compat.h"
#include "kernels/activation.h"
#include "plan/device.h"
#include "plan/settings.h"
#include "tensor/device_buffer.h"
#include "tensor/dtype.h"
#include "tensor/errors.h"
#include "tensor/gemm.h"
#include "tensor/weight_store.h"

namespace lc0rocm {

constexpr int kSquares = 64;
constexpr int kInputPlanes = 112;
constexpr int kPolicyOutputs = 1858;

// lc0rocm_config with enumerations kept as net.proto numbers, the
// activations resolved and the settings read.
struct NetConfig {
  int network = 0;            // NetworkFormat.NetworkStructure
  int policy = 0;             // NetworkFormat.PolicyFormat
  int value = 0;              // NetworkFormat.ValueFormat (1 classical, 2 WDL)
  int moves_left = 0;         // NetworkFormat.MovesLeftFormat
  int input_embedding = 0;    // NetworkFormat.InputEmbeddingFormat
  Activation default_act = Activation::Relu;
  Activation ffn_act = Activation::Relu;
  Activation smolgen_act = Activation::Swish;
  DType dtype = DType::F32;
  int max_batch = 0;
  DeviceInfo device;
  Settings settings;
};

// A second stream for the branches of a pass that do not depend on each
// other (convolution bodies' value and moves-left heads beside the policy
// head; attention bodies' Q|K|V beside smolgen at batch 1-2,
// native/docs/SIDE_LANE.md): small launches of two branches then run side by
// side instead of one after the other. In a captured graph the fork and
// the join become edges.
// Owned by the stream that runs the pass, with its own BLAS handle (a
// handle's workspace must not serve two GEMMs at once).
struct SideLane {
  hipStream_t stream = nullptr;
  Blas* blas = nullptr;
  hipEvent_t forked = nullptr, done = nullptr;
  bool open = false;  // forked and not joined yet
};

// What one forward pass runs on: one stream, its BLAS handle, its scratch.
// Scratch from arena is valid until the pass ends; it is never zeroed.
struct ForwardContext {
  hipStream_t stream;
  Blas& blas;
  Arena& arena;
  DType dtype;
  const DeviceInfo& device;
  SideLane* side = nullptr;  // null: every branch runs on stream
  // Room for a float dense layer's input split for tf32 products
  // (kernels/tf32_split.hip, native/docs/TF32_SPLIT.md), taken by the body that
  // runs them (null: none yet). Never shared between streams.
  float* tf32_scratch = nullptr;
  size_t tf32_scratch_floats = 0;
};

// A context for work that may run beside whatever ctx's stream does next:
// the side lane, once it has waited for everything issued on ctx.stream so
// far; ctx itself without a side lane. Both branches may take arena scratch
// (the arena never hands out the same bytes twice in a pass).
inline ForwardContext fork_side(ForwardContext& ctx) {
  SideLane* side = ctx.side;
  if (side == nullptr) return ctx;
  GPU_CHECK(hipEventRecord(side->forked, ctx.stream));
  GPU_CHECK(hipStreamWaitEvent(side->stream, side->forked, 0));
  side->open = true;
  // The side lane takes its own tf32 scratch: the main stream's may be in use.
  return ForwardContext{side->stream, *side->blas, ctx.arena, ctx.dtype, ctx.device, nullptr};
}

// ctx.stream waits for everything issued on the side lane since the fork
// (nothing when nothing was forked: a capture must not wait on a stream
// outside it).
inline void join_side(ForwardContext& ctx) {
  SideLane* side = ctx.side;
  if (side == nullptr || !side->open) return;
  GPU_CHECK(hipEventRecord(side->done, side->stream));
  GPU_CHECK(hipStreamWaitEvent(ctx.stream, side->done, 0));
  side->open = false;
}

struct NetOutputs {
  float* policy;      // [n][1858]
  float* wdl;         // [n][3]
  float* moves_left;  // [n]
};

// A whole network after the input planes. Immutable after construction:
// forward() may run concurrently on different ForwardContexts.
class Body {
 public:
  virtual ~Body() = default;
  // planes: [n][64][112] in ctx.dtype, n <= config.max_batch.
  virtual void forward(ForwardContext& ctx, int n, const void* planes, NetOutputs out) const = 0;
  // Whether forward() forks onto ctx.side (a stream then creates one for it).
  virtual bool uses_side_lane() const { return false; }
  // Whether a pass of n positions launches its kernels as dependent
  // launches (gpu_compat.h) by default (the plan's choice: plan/).
  virtual bool uses_dependent_launch(int /*n*/) const { return false; }
  // How a pass of n positions runs, in words (the plan of it, plan/): for
  // tests and diagnostics (lc0rocm_stream_describe).
  virtual std::string describe(int n) const = 0;
};

// A policy head that a body of another kind can borrow, e.g. the attention
// policy on a convolution body. x: [n][64][channels] in ctx.dtype.
class PolicyHead {
 public:
  virtual ~PolicyHead() = default;
  virtual void forward(ForwardContext& ctx, int n, const void* x, float* policy) const = 0;
};

using BodyFactory = std::unique_ptr<Body> (*)(const NetConfig& config, const WeightStore& weights);
// prefix: "" for top-level fields (ip_pol_w, ip2_pol_w, ...), or e.g.
// "policy_heads.vanilla."; act: the embedding activation (SELU on a
// convolution body).
using PolicyHeadFactory = std::unique_ptr<PolicyHead> (*)(const NetConfig& config,
                                                         const WeightStore& weights,
                                                         const std::string& prefix,
                                                         int channels, Activation act);

// Registries (network.cpp). Register from a static object in your .cpp:
//   static BodyRegistrar reg("attention", &make_attention_body);
void register_body(const std::string& kind, BodyFactory factory);
void register_policy_head(const std::string& kind, PolicyHeadFactory factory);
// Throw LC0ROCM_UNSUPPORTED naming the kind when nothing registered it.
BodyFactory find_body(const std::string& kind);
PolicyHeadFactory find_policy_head(const std::string& kind);

struct BodyRegistrar {
  BodyRegistrar(const char* kind, BodyFactory f) { register_body(kind, f); }
};
struct PolicyHeadRegistrar {
  PolicyHeadRegistrar(const char* kind, PolicyHeadFactory f) { register_policy_head(kind, f); }
};

}  // namespace lc0rocm
