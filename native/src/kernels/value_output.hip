// value_output: value-head logits -> (win, draw, loss) probabilities.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

template <typename T>
__global__ void value_output_kernel(int n, const T* logits, bool wdl, float* out) {
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (wdl) {
    float w = to_float(logits[i * 3]), d = to_float(logits[i * 3 + 1]), l = to_float(logits[i * 3 + 2]);
    float m = fmaxf(w, fmaxf(d, l));
    float ew = expf(w - m), ed = expf(d - m), el = expf(l - m);
    float inv = 1.0f / (ew + ed + el);
    out[i * 3] = ew * inv;
    out[i * 3 + 1] = ed * inv;
    out[i * 3 + 2] = el * inv;
  } else {
    float q = tanhf(to_float(logits[i]));
    out[i * 3] = 0.5f * (1.0f + q);
    out[i * 3 + 1] = 0.0f;
    out[i * 3 + 2] = 0.5f * (1.0f - q);
  }
}

void value_output(hipStream_t stream, DType dt, int n, const void* logits, bool wdl, float* out) {
  if (n == 0) return;
  if (dt == DType::F32)
    gpu_launch(value_output_kernel<float>, blocks_for(n), kBlockThreads, 0, stream, n, (const float*)logits, wdl,
               out);
  else
    gpu_launch(value_output_kernel<half>, blocks_for(n), kBlockThreads, 0, stream, n, (const half*)logits, wdl, out);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
