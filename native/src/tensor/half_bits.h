// half_bits.h - float32 -> IEEE binary16 bits on the host, rounded to
// nearest even (as __float2half rounds), for uploading weights. Plain C++
// without GPU headers, so that tests compile it on the CPU: the GPU
// runtime's host __float2half is a general routine of a few ns a value,
// which made t82's 97 M weights 0.67 s of a backend's creation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lc0rocm {

inline uint16_t half_bits(float value) {
  uint32_t f;
  std::memcpy(&f, &value, sizeof f);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t magnitude = f & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)                      // infinity, or NaN (made quiet)
    return static_cast<uint16_t>(sign | (magnitude > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (magnitude >= 0x477ff000u)                      // 65520 and up round past 65504
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {                    // a normal half (2^-14 and up)
    // Drop 13 mantissa bits, ties to even; a carry out of the mantissa
    // raises the exponent, as it should. Rebias the exponent 127 -> 15.
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
  }
  if (magnitude <= 0x33000000u)                      // up to 2^-25 (a tie, to even): zero
    return static_cast<uint16_t>(sign);
  // A subnormal half counts units of 2^-24: the float's 24-bit significand
  // shifted right by 126 - exponent (14 to 24 here), ties to even. 2^-14
  // rounded up comes out as 0x400, the smallest normal half.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;
  uint32_t units = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u), half_unit = 1u << (shift - 1u);
  if (rest > half_unit || (rest == half_unit && (units & 1u))) ++units;
  return static_cast<uint16_t>(sign | units);
}

inline void half_bits(const float* in, size_t count, uint16_t* out) {
  for (size_t i = 0; i < count; ++i) out[i] = half_bits(in[i]);
}

}  // namespace lc0rocm
