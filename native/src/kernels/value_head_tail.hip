// value_head_tail: a value head's last dense layer and its output in one
// launch: logits = hidden . W + b (W [K][outs] or lc0's dense [outs][K],
// outs 3 for WDL, 1 for a classical head), then value_probabilities.h
// (value_output's arithmetic).
//
// Why: as a product of 1-3 columns, its bias and the output (three
// launches: ~7 us at maia-1900 b64-256 on an H200, mostly latency), it sat
// on the value head's chain, which runs beside the policy head and ends
// the pass when that is shorter. Eight threads per position where K allows
// (a thread each where not): 16-byte loads of slices of its hidden row,
// W as floats in shared memory, float sums joined by shuffles and kept
// unrounded into the output.
#include "../gpu_compat.h"
#include "aligned.h"
#include "ops.h"
#include "value_probabilities.h"

namespace lc0rocm {

constexpr int kTailThreads = 128;
constexpr int kTailLanes = 8;  // threads a position, where K allows: each a slice of K, then 3 shuffles

template <typename T, int kOuts, int kLanes>
__global__ void __launch_bounds__(kTailThreads)
    value_head_tail_kernel(int n, int k, const T* hidden, const T* w, bool w_by_output, const float* b, float* out) {
  extern __shared__ float tail_weights[];  // [k][kOuts], whichever order w comes in
  // The weights are no prior kernel's output: read before the wait
  // (gpu_launch's dependent launch).
  for (int i = threadIdx.x; i < k * kOuts; i += blockDim.x)
    tail_weights[w_by_output ? (i % k) * kOuts + i / k : i] = to_float(w[i]);
  __syncthreads();
  gpu_wait_for_prior_grid();
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  const int position = id / kLanes, lane = id % kLanes;
  // Past the last position a group still takes part in the shuffles (they
  // span the warp); it only stores nothing.
  const bool valid = position < n;
  float logit[kOuts] = {};
  constexpr int kVec = 16 / sizeof(T);  // values a 16-byte load brings
  if (valid) {
    const uint4* row = reinterpret_cast<const uint4*>(hidden + static_cast<size_t>(position) * k);
#pragma unroll 2
    for (int v = lane; v < k / kVec; v += kLanes) {
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
  }
  // The group's lanes are adjacent and kLanes divides any warp width.
#pragma unroll
  for (int m = 1; m < kLanes; m *= 2)
#pragma unroll
    for (int o = 0; o < kOuts; ++o) logit[o] += gpu_shfl_xor(logit[o], m);
  if (!valid || lane != 0) return;
  for (int o = 0; o < kOuts; ++o) logit[o] += b[o];
  value_probabilities(logit, kOuts == 3, out + static_cast<size_t>(position) * 3);
}

template <typename T, int kLanes>
void launch_value_head_tail(hipStream_t stream, int n, int k, int outs, const void* hidden, const void* w,
                            bool w_by_output, const float* b, float* out) {
  const size_t shared = sizeof(float) * k * outs;
  const int grid = blocks_for(static_cast<long long>(n) * kLanes, kTailThreads);
  const T* x = static_cast<const T*>(hidden);
  const T* wt = static_cast<const T*>(w);
  if (outs == 3)
    gpu_launch(value_head_tail_kernel<T, 3, kLanes>, grid, kTailThreads, shared, stream, n, k, x, wt, w_by_output, b,
               out);
  else
    gpu_launch(value_head_tail_kernel<T, 1, kLanes>, grid, kTailThreads, shared, stream, n, k, x, wt, w_by_output, b,
               out);
}

bool value_head_tail(hipStream_t stream, DType dt, int n, int k, int outs, const void* hidden, const void* w,
                     bool w_by_output, const float* b, float* out) {
  const int vec = 16 / static_cast<int>(dtype_size(dt));
  if (!limits::value_tail_fits(dt == DType::F16, k, outs) || !aligned16(hidden)) return false;
  if (n == 0) return true;
  const bool split = (k / vec) % kTailLanes == 0;
  if (dt == DType::F32) {
    if (split) launch_value_head_tail<float, kTailLanes>(stream, n, k, outs, hidden, w, w_by_output, b, out);
    else launch_value_head_tail<float, 1>(stream, n, k, outs, hidden, w, w_by_output, b, out);
  } else {
    if (split) launch_value_head_tail<half, kTailLanes>(stream, n, k, outs, hidden, w, w_by_output, b, out);
    else launch_value_head_tail<half, 1>(stream, n, k, outs, hidden, w, w_by_output, b, out);
  }
  GPU_CHECK_LAUNCH();
  return true;
}

}  // namespace lc0rocm
