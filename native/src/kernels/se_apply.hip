// se_apply: SE excitation fused with the residual add and the activation.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

template <typename T>
__global__ void se_apply_kernel(int n, int channels, const T* x, const T* g, const T* residual,
                                T* y, Activation act) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long total = (long long)n * 64 * channels;
  if (i >= total) return;
  int c = i % channels;
  long long pos = i / (64LL * channels);
  const T* gp = g + pos * 2 * channels;
  float scale = 1.0f / (1.0f + expf(-to_float(gp[c])));
  float v = scale * to_float(x[i]) + to_float(gp[channels + c]);
  if (residual) v += to_float(residual[i]);
  y[i] = from_float<T>(activate(v, act));
}

void se_apply(hipStream_t stream, DType dt, int n, int channels, const void* x, const void* g,
              const void* residual, void* y, Activation act) {
  long long total = (long long)n * 64 * channels;
  if (total == 0) return;
  if (dt == DType::F32)
    se_apply_kernel<float><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        n, channels, (const float*)x, (const float*)g, (const float*)residual, (float*)y, act);
  else
    se_apply_kernel<half><<<blocks_for(total), kBlockThreads, 0, stream>>>(
        n, channels, (const half*)x, (const half*)g, (const half*)residual, (half*)y, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
