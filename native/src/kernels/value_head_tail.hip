// value_head_tail: a value head's last dense layer and its output in one
// launch: logits = hidden . W + b (W [K][outs], outs 3 for WDL, 1 for a
// classical head), then value_output's arithmetic (softmax of the three,
// or ((1 + q) / 2, 0, (1 - q) / 2) with q = tanh(logit)).
//
// Why: as a product of 1-3 columns, its bias and the output (three
// launches: ~7 us at maia-1900 b64-256 on an H200, mostly latency), it sat
// on the value head's chain, which runs beside the policy head and ends
// the pass when that is shorter. A thread per position: 16-byte loads of
// its hidden row, W and b as floats in shared memory, float sums kept
// unrounded into the output.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"

namespace lc0rocm {

constexpr int kTailThreads = 128;

template <typename T, int kOuts>
__global__ void __launch_bounds__(kTailThreads)
    value_head_tail_kernel(int n, int k, const T* hidden, const T* w, const float* b, float* out) {
  extern __shared__ float tail_weights[];  // [k][kOuts]
  // The weights are no prior kernel's output: read before the wait
  // (gpu_launch's dependent launch).
  for (int i = threadIdx.x; i < k * kOuts; i += blockDim.x) tail_weights[i] = to_float(w[i]);
  __syncthreads();
  gpu_wait_for_prior_grid();
  const int position = blockIdx.x * blockDim.x + threadIdx.x;
  if (position >= n) return;
  float logit[kOuts];
  for (int o = 0; o < kOuts; ++o) logit[o] = b[o];
  constexpr int kVec = 16 / sizeof(T);  // values a 16-byte load brings
  const uint4* row = reinterpret_cast<const uint4*>(hidden + static_cast<size_t>(position) * k);
#pragma unroll 4
  for (int v = 0; v < k / kVec; ++v) {
    const uint4 raw = row[v];
    const T* values = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float h = to_float(values[j]);
      const float* wr = tail_weights + (v * kVec + j) * kOuts;
#pragma unroll
      for (int o = 0; o < kOuts; ++o) logit[o] += h * wr[o];
    }
  }
  float* wdl = out + static_cast<size_t>(position) * 3;
  if (kOuts == 3) {
    const float m = fmaxf(logit[0], fmaxf(logit[1], logit[2]));
    const float ew = expf(logit[0] - m), ed = expf(logit[1] - m), el = expf(logit[2] - m);
    const float inv = 1.0f / (ew + ed + el);
    wdl[0] = ew * inv;
    wdl[1] = ed * inv;
    wdl[2] = el * inv;
  } else {
    const float q = tanhf(logit[0]);
    wdl[0] = 0.5f * (1.0f + q);
    wdl[1] = 0.0f;
    wdl[2] = 0.5f * (1.0f - q);
  }
}

template <typename T>
void launch_value_head_tail(hipStream_t stream, int n, int k, int outs, const void* hidden, const void* w,
                            const float* b, float* out) {
  const size_t shared = sizeof(float) * k * outs;
  const int grid = blocks_for(n, kTailThreads);
  const T* x = static_cast<const T*>(hidden);
  const T* wt = static_cast<const T*>(w);
  if (outs == 3)
    gpu_launch(value_head_tail_kernel<T, 3>, grid, kTailThreads, shared, stream, n, k, x, wt, b, out);
  else
    gpu_launch(value_head_tail_kernel<T, 1>, grid, kTailThreads, shared, stream, n, k, x, wt, b, out);
}

bool value_head_tail(hipStream_t stream, DType dt, int n, int k, int outs, const void* hidden, const void* w,
                     const float* b, float* out) {
  const int vec = 16 / static_cast<int>(dtype_size(dt));
  if ((outs != 1 && outs != 3) || k < 1 || k % vec != 0 || k > kValueTailMaxInputs || !aligned16(hidden))
    return false;
  if (n == 0) return true;
  if (dt == DType::F32) launch_value_head_tail<float>(stream, n, k, outs, hidden, w, b, out);
  else launch_value_head_tail<half>(stream, n, k, outs, hidden, w, b, out);
  GPU_CHECK_LAUNCH();
  return true;
}

}  // namespace lc0rocm
