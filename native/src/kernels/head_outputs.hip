// The heads' outputs to the caller's float32 layouts: the 1858 policy
// logits gathered from a convolution policy's planes, value logits to
// (win, draw, loss) probabilities, any output cast to float with an
// activation (the moves-left head's ReLU).
#include "../gpu_compat.h"
#include "ops.h"
#include "value_probabilities.h"

namespace lc0rocm {

// policy_gather: pick the 1858 policy logits out of a head's raw output.
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

// value_output: value-head logits -> (win, draw, loss) probabilities.
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

// cast: storage type -> float32 with an activation (e.g. moves-left ReLU).
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
