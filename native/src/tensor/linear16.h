// linear16.h - a net file's LINEAR16 values (16-bit steps between a layer's
// min and max) as float32 on the host, bit for bit as the file's reader
// computes them (lc0_rocm/weights/decode.py: q to float, / 65535, * (max -
// min), + min, each step rounded on its own). Plain C++ without GPU
// headers, so that tests compile it on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lc0rocm {

// No fused multiply-add: a compiler that contracts v * span + lo into one
// rounding (GCC's default where the target has FMA, e.g. aarch64) would
// give other bits than the reader's two roundings.
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
inline void linear16_to_float(const uint16_t* in, size_t count, float lo, float span, float* out) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  for (size_t i = 0; i < count; ++i) {
    float v = static_cast<float>(in[i]);
    v = v / 65535.0f;
    v = v * span;
    out[i] = v + lo;
  }
}

// The span the reader multiplies by: max - min, in float.
inline float linear16_span(float lo, float hi) { return hi - lo; }

}  // namespace lc0rocm
