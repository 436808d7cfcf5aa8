// cast: storage type -> float32 with an activation (e.g. moves-left ReLU).
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

template <typename T>
__global__ void cast_to_float_kernel(long long count, const T* x, float* out, Activation act) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= count) return;
  out[i] = activate(to_float(x[i]), act);
}

void cast_to_float(hipStream_t stream, DType dt, long long count, const void* x, float* out,
                   Activation act) {
  if (count == 0) return;
  if (dt == DType::F32)
    cast_to_float_kernel<float><<<blocks_for(count), kBlockThreads, 0, stream>>>(count, (const float*)x, out, act);
  else
    cast_to_float_kernel<half><<<blocks_for(count), kBlockThreads, 0, stream>>>(count, (const half*)x, out, act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
