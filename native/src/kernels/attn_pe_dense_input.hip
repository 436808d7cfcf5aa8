// Input of the PE_DENSE embedding: each square's 112 plane values followed by
// its pre_size outputs of the preprocessing dense layer (bias added here):
// planes [batch][64][112], pre [batch][64*pre_size] -> [batch*64][112 + pre_size].
// One block per row (square of a position).
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

template <typename T>
__global__ void pe_dense_input_kernel(T* out, const T* planes, const T* pre, const float* pre_bias,
                                      int pre_size) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  const int width = kInputPlanes + pre_size;
  const int row = blockIdx.x;  // batch * 64 + square; pre's row too ([batch][64][pre_size])
  const int square = row % 64;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    float v;
    if (c < kInputPlanes) {
      v = load_f(planes, static_cast<long long>(row) * kInputPlanes + c);
    } else {
      const int j = c - kInputPlanes;
      v = load_f(pre, static_cast<long long>(row) * pre_size + j) + pre_bias[square * pre_size + j];
    }
    store_f(out, static_cast<long long>(row) * width + c, v);
  }
}

template <typename T>
void pe_dense_input(T* out, const T* planes, const T* pre, const float* pre_bias, int batch,
                    int pre_size, hipStream_t stream) {
  if (batch == 0) return;
  gpu_launch(pe_dense_input_kernel<T>, batch * 64, kRowThreads, 0, stream, out, planes, pre, pre_bias, pre_size);
  check_launch("pe_dense_input");
}

template void pe_dense_input<float>(float*, const float*, const float*, const float*, int, int,
                                    hipStream_t);
template void pe_dense_input<__half>(__half*, const __half*, const __half*, const float*, int,
                                     int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
