// fastmath.h - lc0's float approximations that change search numbers (its
// FastExp for the policy softmax, FastLog for cpuct growth, FastLogistic for
// WDL rescaling) and its 16-bit prior storage. Written to give the same
// numbers as lc0_rocm/search/fastmath.py, the reference, bit for bit: float
// where it computes in float32, double where it computes in Python floats.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

// Contracting a*b+c into an FMA would change the last bits.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace lc0core {
namespace search {

inline float bits_to_float(uint32_t bits) {
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

inline uint32_t float_to_bits(float x) {
  uint32_t out;
  std::memcpy(&out, &x, 4);
  return out;
}

// lc0's FastExp, float32 throughout.
inline float fast_exp(float x) {
  const float a = x * 1.442695040f;
  if (a < -126.0f) return 0.0f;
  const int32_t whole = a < 0 ? int32_t(a - 1.0f) : int32_t(a);
  const float frac = a - float(whole);
  const float mant = 1.0f + frac * (0.6602339f + 0.33976606f * frac);
  const uint32_t bits = uint32_t(int64_t(float_to_bits(mant)) + (int64_t(whole) << 23));
  return bits_to_float(bits);
}

// lc0's FastLog, in double like the reference.
inline double fast_log(double a) {
  int exponent = 0;
  double mantissa;
  uint64_t bits;
  std::memcpy(&bits, &a, 8);
  const int biased = int(bits >> 52) & 0x7FF;
  if (biased != 0 && biased != 0x7FF) {
    // frexp of a normal number, from its bits (frexp is a library call):
    // mantissa in [0.5, 1) with the same sign and fraction.
    exponent = biased - 1022;
    bits = (bits & ~(uint64_t(0x7FF) << 52)) | (uint64_t(1022) << 52);
    std::memcpy(&mantissa, &bits, 8);
  } else {
    mantissa = std::frexp(a, &exponent);   // zero, subnormal, inf, nan
  }
  const double out = 2.0 * mantissa - 1.0;
  const double log2 = out * (1.3465552 - 0.34655523 * out) + double(exponent - 1);
  return 0.6931471805599453 * log2;
}

inline double fast_logistic(double a) {
  if (a > 20.0) return 1.0;
  if (a < -20.0) return 0.0;
  return 1.0 / (1.0 + double(fast_exp(float(-a))));
}

// lc0's Edge prior storage: 16 bits of the float after a rounding constant.
// The code orders like the prior, so edges are sorted by it.
inline uint16_t compress_prior(float p) {
  const int64_t bits = int64_t(float_to_bits(p)) + ((1 << 11) - (int64_t(3) << 28));
  return bits < 0 ? 0 : uint16_t(bits >> 12);
}

inline float decompress_prior(uint16_t code) {
  return bits_to_float((uint32_t(code) << 12) | (uint32_t(3) << 28));
}

}  // namespace search
}  // namespace lc0core
