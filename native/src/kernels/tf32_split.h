// tf32_split.h - a float as a tf32 head plus its float remainder, for
// products that carry float32's precision on tf32 tensor cores (three
// passes: head.head + remainder.head + head.remainder; the remainder's
// own product, ~2^-22 of the result, is dropped). Host and device share it:
// weights are split on the device once at load, activations before each
// product (tf32_split.hip).
#pragma once
#include <cstdint>
#include <cstring>

namespace lc0rocm {

// x rounded to tf32 (10 mantissa bits), to nearest, ties to even: the
// tensor cores then take it exactly. Infinities and NaN pass unchanged.
#if defined(__HIPCC__) || defined(__CUDACC__)
__host__ __device__
#endif
inline float tf32_head(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // finite: carry may reach the exponent, as rounding should
    u += 0xfffu + ((u >> 13) & 1u);
    u &= 0xffffe000u;
  }
  float head;
  std::memcpy(&head, &u, sizeof head);
  return head;
}

// What tf32_head leaves out (exact in float); 0 where the head is not finite,
// so an infinity stays an infinity instead of turning into NaN.
#if defined(__HIPCC__) || defined(__CUDACC__)
__host__ __device__
#endif
inline float tf32_rest(float x, float head) {
  const float rest = x - head;
  return rest - rest == 0.0f ? rest : 0.0f;
}

}  // namespace lc0rocm
