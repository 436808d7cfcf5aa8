// Post-LN of the encoder layers, fused with the bias of the GEMM before it,
// an activation, alpha scaling and the residual add:
//   out = LN(act(in + bias) * alpha + skip) * gammas + betas.
// One block per row; the row is kept in shared memory as float so the mean
// and the (two-pass) variance read global memory once.
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void layer_norm_kernel(T* out, const T* in, const float* bias, const T* skip,
                                  const float* gammas, const float* betas, int cols, float alpha,
                                  float eps, Activation act) {
  extern __shared__ float shared[];
  float* row = shared;                 // cols floats
  float* scratch = shared + cols;      // blockDim.x floats
  const long long base = (long long)blockIdx.x * cols;

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = load_f(in, base + c);
    if (bias != nullptr) v += bias[c];
    v = activate(v, act) * alpha;
    if (skip != nullptr) v += load_f(skip, base + c);
    row[c] = v;
    sum += v;
  }
  const float mean = block_sum(sum, scratch) / cols;

  float squares = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float d = row[c] - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(block_sum(squares, scratch) / cols + eps);

  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = (row[c] - mean) * inv_std * gammas[c] + betas[c];
    store_f(out, base + c, v);
  }
}

template <typename T>
void layer_norm(T* out, const T* in, const float* bias, const T* skip, const float* gammas,
                const float* betas, int rows, int cols, float alpha, float eps, Activation act,
                hipStream_t stream) {
  if (rows == 0) return;
  int block = 32;
  while (block < 256 && block * 4 < cols) block *= 2;  // about 4 values per thread
  size_t shared = (size_t)(cols + block) * sizeof(float);
  layer_norm_kernel<T><<<rows, block, shared, stream>>>(out, in, bias, skip, gammas, betas, cols,
                                                        alpha, eps, act);
  check_launch("layer_norm");
}

template void layer_norm<float>(float*, const float*, const float*, const float*, const float*,
                                const float*, int, int, float, float, Activation, hipStream_t);
template void layer_norm<__half>(__half*, const __half*, const float*, const __half*,
                                 const float*, const float*, int, int, float, float, Activation,
                                 hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
