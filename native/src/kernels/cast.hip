// cast: storage type -> float32 with an activation (e.g. moves-left ReLU).
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

template <typename T>
__global__ void cast_to_float_kernel(long long count, const T* x, float* out, Activation act) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= count) return;
  out[i] = activate(to_float(x[i]), act);
}

void cast_to_float(hipStream_t stream, DType dt, long long count, const void* x, float* out,
                   Activation act) {
  if (count == 0) return;
  if (dt == DType::F32)
    gpu_launch(cast_to_float_kernel<float>, blocks_for(count), kBlockThreads, 0, stream, count, (const float*)x, out,
               act);
  else
    gpu_launch(cast_to_float_kernel<half>, blocks_for(count), kBlockThreads, 0, stream, count, (const half*)x, out,
               act);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
