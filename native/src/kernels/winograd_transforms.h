// winograd_transforms.h - the one-dimensional transforms of Winograd
// F(4x4, 3x3) (Lavin and Gray, points 0, +-1, +-2 and infinity), shared by
// winograd_input.hip, winograd_output.hip and winograd_output_input.hip.
// A 2-D transform applies one to the columns, then to the rows.
#pragma once
#include "../gpu_compat.h"

namespace lc0rocm {
namespace winograd_detail {

// o = B^T d for one column of six input values.
__device__ __forceinline__ void input_1d(const float d[6], float o[6]) {
  o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  o[1] = -4.0f * d[1] - 4.0f * d[2] + d[3] + d[4];
  o[2] = 4.0f * d[1] - 4.0f * d[2] - d[3] + d[4];
  o[3] = -2.0f * d[1] - d[2] + 2.0f * d[3] + d[4];
  o[4] = 2.0f * d[1] - d[2] - 2.0f * d[3] + d[4];
  o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// o = A^T m for six products, four outputs.
__device__ __forceinline__ void output_1d(const float m[6], float o[4]) {
  o[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  o[1] = m[1] - m[2] + 2.0f * (m[3] - m[4]);
  o[2] = m[1] + m[2] + 4.0f * (m[3] + m[4]);
  o[3] = m[1] - m[2] + 8.0f * (m[3] - m[4]) + m[5];
}

}  // namespace winograd_detail
}  // namespace lc0rocm
