// bias_act: bias + optional residual + activation, fused, one pass.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

template <typename T>
__global__ void bias_act_kernel(long long total, int channels, const T* x, const float* bias,
                                const T* residual, T* y, Activation act) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= total) return;
  float v = to_float(x[i]);
  if (bias) v += bias[i % channels];
  if (residual) v += to_float(residual[i]);
  y[i] = from_float<T>(activate(v, act));
}

void bias_act(hipStream_t stream, DType dt, long long rows, int channels, const void* x,
              const float* bias, const void* residual, void* y, Activation act) {
  long long total = rows * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    bias_act_kernel<float><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        total, channels, (const float*)x, bias, (const float*)residual, (float*)y, act);
  else
    bias_act_kernel<half><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        total, channels, (const half*)x, bias, (const half*)residual, (half*)y, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
