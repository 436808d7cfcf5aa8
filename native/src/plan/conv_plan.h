// plan/conv_plan.h - which kernels a convolution body runs, per layer, for
// a batch size on a device: the one place these choices are made
// (conv3x3.cpp and resnet.cpp run what the plan says; describe() prints
// it). Plain C++, unit-tested on the CPU (tests/test_native_plan.py).
#pragma once
#include <string>
#include <vector>

#include "device.h"
#include "settings.h"

namespace lc0rocm {

// A 3x3 convolution: in -> out channels, followed by an SE unit of
// se_hidden (0: none).
struct ConvShape {
  int in = 0, out = 0;
  int se_hidden = 0;
};

enum class ConvKernel {
  Implicit,  // conv3x3_implicit.hip: an implicit GEMM on mma.sync (NVIDIA, half)
  Winograd,  // F(4x4, 3x3) transforms around 36 products
  Im2col,    // im2col + one product (AMD half below batch 16 among others)
};

// A convolution's choices that hold at every batch size (set when it is
// loaded: they say which weight layouts it keeps).
struct ConvRules {
  bool implicit = false, implicit_always = false;  // the implicit kernel: below batch 32, or always
  bool winograd = false, winograd_always = false;  // Winograd: from batch 16 (half), or always
  bool fused_se = false;                           // with an SE unit: the unit in one launch
  bool chain_fits = false;                         // Winograd output and next input in one launch (its shape)
};
ConvRules conv_rules(bool half, const ConvShape& shape, const DeviceInfo& device, const Settings& settings);
ConvKernel conv_kernel(const ConvRules& rules, int n);

// A convolution body's shapes.
struct ConvNet {
  bool half = false;
  int channels = 0;
  ConvShape input;
  std::vector<ConvShape> tower;  // each residual block's two convolutions, in order
  bool conv_policy = false;      // a convolution policy (its two layers below)
  ConvShape policy1, policy;
  int value_inputs = 0, value_outputs = 0;  // the value head's last layer
};

// What resnet_tower_prepare found for the net on the device (the tower's
// shared memory per layout, its clusters' occupancy): kernels/ops.h.
struct TowerFacts {
  bool ready = false;         // a position per block fits and the kernel may have the memory
  bool split_fits = false;    // with K split over two warp groups
  bool pairs_fit = false;     // two positions per block
  int cluster_positions = 0;  // a position per cluster of 4 blocks up to this batch (0: none)
};

// The net's choices that hold at every batch size.
struct BodyRules {
  bool tower_candidate = false;  // worth keeping the one-launch tower's weight layout
  bool tower = false;            // the residual tower in one launch
  bool tower_head = false;       // the convolution policy's first layer may join it
  bool chain = false;            // Winograd chains allowed
  bool value_tail = false;       // the value head's last layer and output in one launch
  bool forced_pairs = false, pairs = false, split = false;
  int cluster_positions = 0;
};
// Before the layers are loaded: whether the tower in one launch may run
// (and so whether they keep its weight layout).
bool resnet_tower_candidate(const DeviceInfo& device, const Settings& settings, bool half, int channels);
BodyRules body_rules(const ConvNet& net, const DeviceInfo& device, const Settings& settings, const TowerFacts& facts);

enum class TowerPath { OneLaunch, WinogradChain, LayerAtATime };
enum class TowerLayout { None, Cluster, Single, Split, Pair };

struct ConvPlan {
  int batch = 0;
  TowerPath tower = TowerPath::LayerAtATime;
  TowerLayout layout = TowerLayout::None;  // of the one launch
  bool head_in_tower = false;    // the policy's first convolution as the tower kernel's last step
  bool policy_chained = false;   // the convolution policy continues the Winograd chain
  std::vector<ConvKernel> layers;  // input, the tower's, then the policy's two (conv_policy)
  // Dependent launches where the device has them: our kernels back to back,
  // maia-1900 fp16 b1 +20..40 %, b16 +20..29 % (H100).
  bool dependent_launch = false;
};

ConvPlan plan_conv(const ConvNet& net, const BodyRules& rules, const DeviceInfo& device, const Settings& settings,
                   int n);
std::string describe_conv(const ConvNet& net, const BodyRules& rules, const DeviceInfo& device,
                          const Settings& settings, int n);

}  // namespace lc0rocm
