// value_output: value-head logits -> (win, draw, loss) probabilities.
#include "../gpu_compat.h"
#include "ops.h"
#include "value_probabilities.h"

namespace lc0rocm {

template <typename T>
__global__ void value_output_kernel(int n, const T* logits, bool wdl, float* out) {
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float logit[3];
  for (int o = 0; o < (wdl ? 3 : 1); ++o) logit[o] = to_float(logits[i * (wdl ? 3 : 1) + o]);
  value_probabilities(logit, wdl, out + static_cast<size_t>(i) * 3);
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
