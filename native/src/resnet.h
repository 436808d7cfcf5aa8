// resnet.h - convolution bodies (ResNet, SE-ResNet) and their heads.
//
// Tensors (from native.py, batch norm already folded, all layouts NHWC):
//   resnet.input.{w,b}            3x3 conv, w [9*112][C] (row = tap*112 + plane), b [C]
//   resnet.block.<i>.conv{1,2}.{w,b}   3x3 convs, w [9*C][C]
//   resnet.block.<i>.se{1,2}.{w,b}  SE dense layers, se1.w [C][H], se2.w [H][2C] (optional)
//   policy, convolution: resnet.policy1.{w,b} (3x3), resnet.policy.{w,b} (3x3 to 80),
//                        resnet.policy.gather (int32 [1858], index square*80 + plane)
//   policy, classical:   resnet.policy.{w,b} (1x1, [C][P]), resnet.policy_ip.{w,b} ([64P][1858])
//   policy, attention:   borrowed PolicyHead "attention", tensors under "policy_head."
//   value:      resnet.value.{w,b} (1x1), resnet.value_ip1.{w,b}, resnet.value_ip2.{w,b}
//   moves left: resnet.mlh.{w,b} (1x1), resnet.mlh_ip1.{w,b}, resnet.mlh_ip2.{w,b}
// Dense weights are [in][out] (x . W); square-major flattening (square*P + c).
#pragma once
#include "body.h"

namespace lc0rocm {

std::unique_ptr<Body> make_resnet_body(const NetConfig& config, const WeightStore& weights);

}  // namespace lc0rocm
