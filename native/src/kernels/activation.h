// activation.h - activation functions for kernels, numbered as net.proto's
// NetworkFormat.ActivationFunction (DEFAULT is resolved before it gets here).
#pragma once
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
      const float e = expf(fminf(x, 20.0f));
      const float n = e * (e + 2.0f);
      return x * n / (n + 2.0f);
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

}  // namespace lc0rocm
