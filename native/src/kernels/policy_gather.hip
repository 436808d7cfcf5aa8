// policy_gather: pick the 1858 policy logits out of a head's raw output.
#include "../gpu_compat.h"
#include "ops.h"

namespace lc0rocm {

constexpr int kPolicySize = 1858;

template <typename T>
__global__ void policy_gather_kernel(int n, long long row_stride, const T* x,
                                     const int32_t* indices, float* policy) {
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= (long long)n * kPolicySize) return;
  int k = i % kPolicySize;
  long long pos = i / kPolicySize;
  policy[i] = to_float(x[pos * row_stride + indices[k]]);
}

void policy_gather(hipStream_t stream, DType dt, int n, long long row_stride, const void* x,
                   const int32_t* indices, float* policy) {
  long long total = (long long)n * kPolicySize;
  if (total == 0) return;
  if (dt == DType::F32)
    gpu_launch(policy_gather_kernel<float>, blocks_for(total), kBlockThreads, 0, stream, n, row_stride,
               (const float*)x, indices, policy);
  else
    gpu_launch(policy_gather_kernel<half>, blocks_for(total), kBlockThreads, 0, stream, n, row_stride,
               (const half*)x, indices, policy);
  GPU_CHECK_LAUNCH();
}

}  // namespace lc0rocm
