// plan/conv_plan.cpp - a convolution body's kernel choices (see
// conv_plan.h). Each threshold below names its measurement.
#include "conv_plan.h"

#include "limits.h"

namespace lc0rocm {
namespace {

// The SE unit in one launch (se_fused.hip) is bound by the latency of each
// position's few dependent steps: measured faster than the 7-launch SE unit
// at 64 channels (maia-1900, fp16 +7..19 %, fp32 +6..16 %) and slower at 128
// (resnet-se fp16 -2..-14 %) on an H200 (SE_FUSED.md).
constexpr int kFusedSeMaxChannels = 64;

// Winograd F(4x4, 3x3) against im2col + GEMM (H100, maia-1900, WINOGRAD.md):
// in float it is even at batches 1-16 and far ahead from 64 (+34 % at 64,
// +75 % at 256); in half, with the transforms spread over six threads per
// item below batch 256 and the activation fixed at compile time, it is even
// up to 8 and ahead from 16 on (16 +2..5 %, 48 +3..33 %; 24-32 even).
constexpr int kWinogradMinBatchHalf = 16;

// The implicit-GEMM kernel (conv3x3_implicit.hip, NVIDIA sm_80+, half),
// measured on H100s (CONV3X3_IMPLICIT.md): against im2col + GEMM b1
// +1..9 %, b8 +2..15 %; against Winograd with its chain b16 -1..+10 %, b24
// -2..+16 %, b32 -1..+4 %, b48 -15..+9 % (two hosts disagree), so it takes
// batches 1-31 where it runs; elsewhere the Winograd threshold above holds.
constexpr int kImplicitMaxBatch = 31;

bool chains(const ConvRules& rules, int n) { return conv_kernel(rules, n) == ConvKernel::Winograd && rules.chain_fits; }

// Every convolution of the net: input, tower, policy.
std::vector<ConvShape> layers_of(const ConvNet& net) {
  std::vector<ConvShape> all{net.input};
  all.insert(all.end(), net.tower.begin(), net.tower.end());
  if (net.conv_policy) {
    all.push_back(net.policy1);
    all.push_back(net.policy);
  }
  return all;
}

int widest_se_hidden(const ConvNet& net) {
  int widest = 0;
  for (const ConvShape& c : net.tower) widest = c.se_hidden > widest ? c.se_hidden : widest;
  return widest;
}

}  // namespace

ConvRules conv_rules(bool half, const ConvShape& shape, const DeviceInfo& device, const Settings& s) {
  ConvRules r;
  r.winograd = !s.off(LC0ROCM_PATH_WINOGRAD);
  r.winograd_always = s.forced_on(LC0ROCM_PATH_WINOGRAD) || !half;
  // Winograd forced at every batch size wins unless the implicit kernel is forced too.
  r.implicit = !s.off(LC0ROCM_PATH_IMPLICIT_CONV) &&
               (!s.forced_on(LC0ROCM_PATH_WINOGRAD) || s.forced_on(LC0ROCM_PATH_IMPLICIT_CONV)) &&
               limits::implicit_conv_fits(device, half, shape.in, shape.out);
  r.implicit_always = r.implicit && s.forced_on(LC0ROCM_PATH_IMPLICIT_CONV);
  const bool fused_se = s.forced_on(LC0ROCM_PATH_FUSED_SE) ||
                        (!s.off(LC0ROCM_PATH_FUSED_SE) && shape.out <= kFusedSeMaxChannels);
  r.fused_se = fused_se && shape.se_hidden > 0 && limits::se_fused_fits(shape.out, shape.se_hidden);
  r.chain_fits = limits::winograd_chain_fits(half, shape.out, shape.se_hidden);
  return r;
}

ConvKernel conv_kernel(const ConvRules& r, int n) {
  if (r.implicit && (r.implicit_always || n <= kImplicitMaxBatch)) return ConvKernel::Implicit;
  if (r.winograd && (r.winograd_always || n >= kWinogradMinBatchHalf)) return ConvKernel::Winograd;
  return ConvKernel::Im2col;
}

bool resnet_tower_candidate(const DeviceInfo& device, const Settings& s, bool half, int channels) {
  return !s.off(LC0ROCM_PATH_RESNET_TOWER) && limits::resnet_tower_fits(device, half, channels, 1, 0);
}

BodyRules body_rules(const ConvNet& net, const DeviceInfo& device, const Settings& s, const TowerFacts& facts) {
  BodyRules r;
  r.tower_candidate = resnet_tower_candidate(device, s, net.half, net.channels);
  r.tower = r.tower_candidate && facts.ready &&
            limits::resnet_tower_fits(device, net.half, net.channels, static_cast<int>(net.tower.size() / 2),
                                      widest_se_hidden(net));
  r.tower_head = r.tower && net.conv_policy && net.policy1.in == net.channels && net.policy1.out == net.channels &&
                 !s.off(LC0ROCM_PATH_TOWER_POLICY);
  r.forced_pairs = s.forced_on(LC0ROCM_PATH_TOWER_PAIRS);
  r.pairs = facts.pairs_fit && !s.off(LC0ROCM_PATH_TOWER_PAIRS);
  r.split = facts.split_fits && !s.off(LC0ROCM_PATH_TOWER_SPLIT);
  r.cluster_positions = s.off(LC0ROCM_PATH_TOWER_CLUSTER) || r.forced_pairs ? 0 : facts.cluster_positions;
  r.chain = !s.off(LC0ROCM_PATH_WINOGRAD_CHAIN);
  r.value_tail = !s.off(LC0ROCM_PATH_VALUE_TAIL) && limits::value_tail_fits(net.half, net.value_inputs,
                                                                             net.value_outputs);
  return r;
}

ConvPlan plan_conv(const ConvNet& net, const BodyRules& r, const DeviceInfo& device, const Settings& s, int n) {
  ConvPlan plan;
  plan.batch = n;
  plan.dependent_launch = device.dependent_launch;
  std::vector<ConvRules> rules;
  for (const ConvShape& c : layers_of(net)) {
    rules.push_back(conv_rules(net.half, c, device, s));
    plan.layers.push_back(conv_kernel(rules.back(), n));
  }
  if (r.tower) {
    plan.tower = TowerPath::OneLaunch;
    // A position per cluster while every block can have a multiprocessor of
    // its own; then a position per block while every position can have a
    // multiprocessor, two beyond (the pair shares its weight fragments;
    // RESNET_TOWER.md).
    if (n <= r.cluster_positions) {
      plan.layout = TowerLayout::Cluster;
    } else {
      const bool two = r.forced_pairs || n > device.multiprocessors;
      plan.layout = two && r.pairs ? TowerLayout::Pair : r.split ? TowerLayout::Split : TowerLayout::Single;
    }
    // The policy's first layer inside the tower only where a block takes two
    // positions at a time: H200, maia-1900, in turns against it after the
    // tower (run 104, eight rounds) b256 +4.1 %, b512 +0.9 %. With a position
    // per block the longer tower delays the value head, which starts from the
    // tower's end beside the policy head, and ends the pass later (run 103:
    // b64 -4.0 %).
    plan.head_in_tower = r.tower_head && plan.layout == TowerLayout::Pair;
    return plan;
  }
  const size_t tower_end = 1 + net.tower.size();
  bool chained = r.chain;
  for (size_t i = 0; i < tower_end && chained; ++i) chained = chains(rules[i], n);
  if (chained) {
    plan.tower = TowerPath::WinogradChain;
    plan.policy_chained = net.conv_policy && chains(rules[tower_end], n) && chains(rules[tower_end + 1], n);
  }
  return plan;
}

std::string describe_conv(const ConvNet& net, const BodyRules& r, const DeviceInfo& device, const Settings& s,
                          int n) {
  const ConvPlan plan = plan_conv(net, r, device, s, n);
  std::string path;
  switch (plan.tower) {
    case TowerPath::OneLaunch:
      path = "residual tower in one launch, ";
      switch (plan.layout) {
        case TowerLayout::Cluster: path += "a position per cluster of 4 blocks"; break;
        case TowerLayout::Pair: path += "two positions per block"; break;
        case TowerLayout::Split: path += "a position per block, K split"; break;
        default: path += "a position per block"; break;
      }
      if (plan.head_in_tower) path += ", the policy's first convolution in it";
      break;
    case TowerPath::WinogradChain: path = "residual tower as one Winograd chain"; break;
    case TowerPath::LayerAtATime: path = "residual tower a layer at a time"; break;
  }
  return "convolution body, " + std::to_string(net.channels) + " channels: " + path;
}

}  // namespace lc0rocm
