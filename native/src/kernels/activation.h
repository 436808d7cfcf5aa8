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
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
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
