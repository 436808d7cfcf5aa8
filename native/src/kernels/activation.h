// activation.h - activation functions for kernels, numbered as net.proto's
// NetworkFormat.ActivationFunction (DEFAULT is resolved before it gets here).
#pragma once
#include <type_traits>

#include "../gpu_compat.h"

namespace lc0rocm {

enum class Activation : int {
  Mish = 1,
  Relu = 2,
  None = 3,
  Tanh = 4,
  Sigmoid = 5,
  Selu = 6,
  Swish = 7,
  Relu2 = 8,
};

inline bool is_known_activation(int v) { return v >= 1 && v <= 8; }

__host__ __device__ __forceinline__ float activate(float x, Activation act) {
  switch (act) {
    case Activation::Relu: return x > 0.0f ? x : 0.0f;
    case Activation::Mish: {
      // x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2): one
      // exp instead of exp, log and tanh (the FFN activation of bt4-like
      // nets, where three made it compute-bound). e^x is clamped where the
      // ratio is 1 in float anyway.
      // On the device: the hardware exp2 and reciprocal (a few ulp) instead
      // of the IEEE expf and division, several instructions each: bt4's
      // mish launches measured 13-24 % faster (BENCHMARKS.md).
#if defined(LC0ROCM_DEVICE_CODE)
      const float e = __expf(fminf(x, 20.0f));
      const float n = e * (e + 2.0f);
      return x * __fdividef(n, n + 2.0f);
#else
      const float e = expf(fminf(x, 20.0f));
      const float n = e * (e + 2.0f);
      return x * n / (n + 2.0f);
#endif
    }
    case Activation::Tanh: return tanhf(x);
    case Activation::Sigmoid: return 1.0f / (1.0f + expf(-x));
    case Activation::Selu: {
      const float alpha = 1.67326324f, scale = 1.05070098f;
      return x > 0.0f ? scale * x : scale * alpha * (expf(x) - 1.0f);
    }
    case Activation::Swish: return x / (1.0f + expf(-x));
    case Activation::Relu2: { float r = x > 0.0f ? x : 0.0f; return r * r; }
    case Activation::None:
    default: return x;
  }
}

#if defined(LC0ROCM_MMA_AVAILABLE)
// Mish of two values into a half pair, in half arithmetic: one ex2.f16x2 for
// both (an H100 issues it as two MUFU.EX2.F16) and a Newton reciprocal, where
// the float formula above spends two special-function instructions (exp2,
// reciprocal) a value. The epilogue of bt4's FFN first product on gemm_sm90
// is bound by those (~16 a cycle per multiprocessor): 1,481 -> 1,384 us a
// pass at bt4 b256 (BENCHMARKS.md, "Mish in half pairs").
// With v = e^-|x| (no overflow, no subnormal denominator):
//   x >= 0: tanh(softplus(x)) = (1 + 2v) / (1 + 2v + 2v^2)
//   x <  0: tanh(softplus(x)) = (v^2 + 2v) / (v^2 + 2v + 2)
// i.e. num = 2v + m, den = num + 2k with (m, k) = (1, v^2) or (v^2, 1); den
// lies in [1, 5]. Measured on an H100 over every finite half: within 0.65 of
// 8e-3 relative + 2e-5, mean 0.69 half ulps from Mish rounded for |x| <= 4
// (tests/native/mish_half2_check.cu); NaN stays NaN.
__device__ __forceinline__ __half2 mish_half2(float a, float b) {
  const __half2 x = __floats2half2_rn(a, b);
  const __half2 arg = __hmul2(__habs2(x), __float2half2_rn(-1.4426950408889634f));
  // The instruction itself: cuda_fp16's h2exp2 goes through two float exp2s.
  unsigned v_bits;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(v_bits) : "r"(*reinterpret_cast<const unsigned*>(&arg)));
  const __half2 v = *reinterpret_cast<const __half2*>(&v_bits);
  const __half2 q = __hmul2(v, v);
  const __half2 zero = __float2half2_rn(0.0f), one = __float2half2_rn(1.0f), two = __float2half2_rn(2.0f);
  unsigned positive;  // 0xffff in the lanes where x >= 0 (PTX, as CUDA 12's __hge2_mask)
  asm("set.ge.u32.f16x2 %0, %1, %2;" : "=r"(positive)
      : "r"(*reinterpret_cast<const unsigned*>(&x)), "r"(*reinterpret_cast<const unsigned*>(&zero)));
  const unsigned one_bits = *reinterpret_cast<const unsigned*>(&one);
  const unsigned q_bits = *reinterpret_cast<const unsigned*>(&q);
  const unsigned m_bits = (one_bits & positive) | (q_bits & ~positive);
  const unsigned k_bits = (q_bits & positive) | (one_bits & ~positive);
  const __half2 num = __hadd2(__hadd2(v, v), *reinterpret_cast<const __half2*>(&m_bits));
  const __half2 den = __hfma2(two, *reinterpret_cast<const __half2*>(&k_bits), num);
  // 1/den: a bit-pattern guess within ~5 % (den's lanes are below the magic,
  // so no borrow crosses them), then two Newton steps.
  const unsigned guess = 0x77987798u - *reinterpret_cast<const unsigned*>(&den);
  __half2 r = *reinterpret_cast<const __half2*>(&guess);
  r = __hmul2(r, __hfma2(__hneg2(den), r, two));
  r = __hmul2(r, __hfma2(__hneg2(den), r, two));
  return __hmul2(x, __hmul2(num, r));
}
#endif

// The activation as a compile-time constant, for kernels that apply it to
// many values per thread: a run-time switch in their unrolled loops is
// inlined once per value (maia's Winograd chain ran ~10 % slower on an H100
// when only the Mish case's code changed). kAnyActivation keeps the run-time
// switch, for the activations no kernel is specialised for.
constexpr Activation kAnyActivation = static_cast<Activation>(0);

template <Activation kAct>
__host__ __device__ __forceinline__ float activate_as(float x, Activation act) {
  return activate(x, kAct == kAnyActivation ? act : kAct);
}

// Two values activated into a half pair (an epilogue's store): Mish in half
// arithmetic on sm_80+ CUDA devices (mish_half2), else the float activation
// rounded once.
template <Activation kAct>
__device__ __forceinline__ __half2 activate_pair_as(float a, float b, Activation act) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  if constexpr (kAct == Activation::Mish) return mish_half2(a, b);
#endif
  return __floats2half2_rn(activate_as<kAct>(a, act), activate_as<kAct>(b, act));
}

template <Activation kAct>
using ActivationConstant = std::integral_constant<Activation, kAct>;

// Calls launch(ActivationConstant<A>{}) with A = act when act is one of
// kFixed, else with A = kAnyActivation; launch instantiates its kernel with
// decltype(tag)::value.
template <Activation... kFixed, typename Launch>
void with_activation_among(Activation act, Launch&& launch) {
  const bool fixed = ((act == kFixed && (launch(ActivationConstant<kFixed>{}), true)) || ...);
  if (!fixed) launch(ActivationConstant<kAnyActivation>{});
}

// The activations of real nets' hot paths fixed: ReLU and none (classic
// nets, heads), Mish (bt4-like FFNs), ReLU² (t82-like FFNs), Swish
// (smolgen).
template <typename Launch>
void with_activation(Activation act, Launch&& launch) {
  with_activation_among<Activation::Relu, Activation::None, Activation::Mish, Activation::Relu2,
                        Activation::Swish>(act, launch);
}

}  // namespace lc0rocm
