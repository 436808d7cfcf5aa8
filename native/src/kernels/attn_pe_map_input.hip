// Input of the PE_MAP embedding: each square's 112 plane values followed by
// lc0's fixed 64-channel positional encoding of that square, which follows
// from the rules: -1 for the square itself, 1 for each square a queen or a
// knight move away, 0 elsewhere. One block per row (square of a position).
#include "../attention_device.h"

namespace lc0rocm {
namespace attn {

__device__ __forceinline__ float positional_encoding(int from, int to) {
  if (from == to) return -1.0f;
  const int dr = to / 8 - from / 8, df = to % 8 - from % 8;
  const int ar = dr < 0 ? -dr : dr, af = df < 0 ? -df : df;
  const bool queen = dr == 0 || df == 0 || ar == af;
  const bool knight = (ar == 1 && af == 2) || (ar == 2 && af == 1);
  return queen || knight ? 1.0f : 0.0f;
}

template <typename T>
__global__ void pe_map_input_kernel(T* out, const T* planes) {
  gpu_release_next_grid();
  gpu_wait_for_prior_grid();  // launched by gpu_launch
  constexpr int width = kInputPlanes + kPosEncodingChannels;
  const int row = blockIdx.x;  // batch * 64 + square
  const int square = row % 64;
  const int c = threadIdx.x;
  if (c >= width) return;
  const float v = c < kInputPlanes ? load_f(planes, static_cast<long long>(row) * kInputPlanes + c)
                                   : positional_encoding(square, c - kInputPlanes);
  store_f(out, static_cast<long long>(row) * width + c, v);
}

template <typename T>
void pe_map_input(T* out, const T* planes, int batch, hipStream_t stream) {
  if (batch == 0) return;
  // 176 values per row: one thread each (a multiple of 64 and of 32).
  gpu_launch(pe_map_input_kernel<T>, batch * 64, 192, 0, stream, out, planes);
  check_launch("pe_map_input");
}

template void pe_map_input<float>(float*, const float*, int, hipStream_t);
template void pe_map_input<__half>(__half*, const __half*, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
