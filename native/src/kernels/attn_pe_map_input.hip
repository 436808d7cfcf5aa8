// Input of the PE_MAP embedding: each square's 112 plane values followed by
// lc0's fixed 64-channel positional encoding of that square, which follows
// from the rules: -1 for the square itself, 1 for each square a queen or a
// knight move away, 0 elsewhere.
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
__global__ void pe_map_input_kernel(T* out, const T* planes, long long total) {
  constexpr int width = kInputPlanes + kPosEncodingChannels;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // index in out
  if (i >= total) return;
  const int c = (int)(i % width);
  const long long row = i / width;
  const int square = (int)(row % 64);
  float v = c < kInputPlanes ? load_f(planes, row * kInputPlanes + c)
                             : positional_encoding(square, c - kInputPlanes);
  store_f(out, i, v);
}

template <typename T>
void pe_map_input(T* out, const T* planes, int batch, hipStream_t stream) {
  long long total = (long long)batch * 64 * (kInputPlanes + kPosEncodingChannels);
  if (total == 0) return;
  const int block = 256;
  pe_map_input_kernel<T><<<div_up(total, block), block, 0, stream>>>(out, planes, total);
  check_launch("pe_map_input");
}

template void pe_map_input<float>(float*, const float*, int, hipStream_t);
template void pe_map_input<__half>(__half*, const __half*, int, hipStream_t);

}  // namespace attn
}  // namespace lc0rocm
