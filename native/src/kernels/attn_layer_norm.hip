// Post-LN of the encoder layers, fused with the bias of the GEMM before it,
// an activation, alpha scaling and the residual add:
//   out = LN(act(in + bias) * alpha + skip) * gammas + betas.
// One warp per row; the row is cached in shared memory as float (each lane
// reads back only what it wrote, so no block barrier), mean and two-pass
// variance reduce with warp shuffles.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void layer_norm_kernel(T* out, const T* in, const float* bias, const T* skip,
                                  const float* gammas, const float* betas, int rows, int cols,
                                  float alpha, float eps, Activation act) {
  extern __shared__ float shared[];
  const int lanes = warpSize;
  const int warp = threadIdx.x / lanes, lane = threadIdx.x % lanes;
  const int row = blockIdx.x * (blockDim.x / lanes) + warp;
  if (row >= rows) return;  // the whole warp leaves together
  float* cache = shared + warp * cols;
  const long long base = static_cast<long long>(row) * cols;

  float sum = 0.0f;
  for (int c = lane; c < cols; c += lanes) {
    float v = load_f(in, base + c);
    if (bias != nullptr) v += bias[c];
    v = activate(v, act) * alpha;
    if (skip != nullptr) v += load_f(skip, base + c);
    cache[c] = v;
    sum += v;
  }
  const float mean = warp_sum(sum) / cols;
  float squares = 0.0f;
  for (int c = lane; c < cols; c += lanes) {
    const float d = cache[c] - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(warp_sum(squares) / cols + eps);
  for (int c = lane; c < cols; c += lanes)
    store_f(out, base + c, (cache[c] - mean) * inv_std * gammas[c] + betas[c]);
}

template <typename T>
void layer_norm(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                const float* betas, int rows, int cols, float alpha, float eps, Activation act,
                int warp_size, hipStream_t stream) {
  if (rows == 0) return;
  check_warp_size(warp_size);
  if (cols > 12288)
    fail(LC0ROCM_UNSUPPORTED, "layer norm over " + std::to_string(cols) + " values (at most 12288)");
  // Up to 8 rows (warps) per block, within 32 KB of row cache.
  const int warps = std::max(1, std::min(8, static_cast<int>((32 << 10) / (cols * sizeof(float)))));
  const size_t shared = static_cast<size_t>(warps) * cols * sizeof(float);
  layer_norm_kernel<T><<<div_up(rows, warps), warps * warp_size, shared, stream>>>(
      out, in, bias, skip, gammas, betas, rows, cols, alpha, eps, act);
  check_launch("layer_norm");
}

template void layer_norm<float>(float*, const float*, const float*, const float*, const float*,
                                const float*, int, int, float, float, Activation, int, hipStream_t);
template void layer_norm<__half>(__half*, const __half*, const float*, const __half*,
                                 const float*, const float*, int, int, float, float, Activation,
                                 int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
