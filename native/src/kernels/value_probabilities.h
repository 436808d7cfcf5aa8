// The value head's logits -> (win, draw, loss) probabilities, shared by
// value_output.hip and value_head_tail.hip so both give the same numbers.
#pragma once
#include "../gpu_compat.h"

namespace lc0rocm {

// wdl: softmax of 3 logits. Otherwise one logit, q = tanh: (1+q)/2, 0, (1-q)/2.
__device__ inline void value_probabilities(const float* logit, bool wdl, float* out) {
  if (wdl) {
    const float m = fmaxf(logit[0], fmaxf(logit[1], logit[2]));
    const float ew = expf(logit[0] - m), ed = expf(logit[1] - m), el = expf(logit[2] - m);
    const float inv = 1.0f / (ew + ed + el);
    out[0] = ew * inv;
    out[1] = ed * inv;
    out[2] = el * inv;
  } else {
    const float q = tanhf(logit[0]);
    out[0] = 0.5f * (1.0f + q);
    out[1] = 0.0f;
    out[2] = 0.5f * (1.0f - q);
  }
}

}  // namespace lc0rocm
