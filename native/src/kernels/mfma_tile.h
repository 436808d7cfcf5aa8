// mfma_tile.h - AMD CDNA's matrix cores for one 16 x 16 x 16 product of half
// matrices with float sums (v_mfma_f32_16x16x16f16), a wave of 64 lanes per
// product. A lane's fragments, element i = 0..3, l = its lane in the wave
// (the layout CDNA's instruction defines; composable_kernel describes it as
// four input blocks of 16 lanes along K and groups of 4 output rows):
//   A [16 m][16 k]: A[l % 16][4 * (l / 16) + i]
//   B [16 k][16 n]: B[4 * (l / 16) + i][l % 16]
//   C [16 m][16 n]: C[4 * (l / 16) + i][l % 16]   (float)
// mfma_16x16x16(a, b, c) returns C + A . B.
//
// On gfx908, gfx90a and gfx94x it is the compiler builtin. Under HIP-CPU
// with LC0ROCM_MFMA_EMULATE (tests/native_attention_hipcpu.cpp) it is a
// shuffle emulation of that layout, so the kernels' indexing is checked on
// the CPU. Elsewhere (other AMD targets, which the launchers never give
// these kernels) it traps.
#pragma once

#include "../gpu_compat.h"

namespace lc0rocm {

struct MfmaHalves {
  __half v[4];
};
struct MfmaFloats {
  float v[4];
};

#if defined(__gfx908__) || defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || \
    defined(__gfx942__)
#define LC0ROCM_MFMA_DEVICE 1
#endif

__device__ __forceinline__ MfmaFloats mfma_16x16x16(const MfmaHalves& a, const MfmaHalves& b, MfmaFloats c) {
#if defined(LC0ROCM_MFMA_DEVICE)
  typedef _Float16 HalfX4 __attribute__((ext_vector_type(4)));
  typedef float FloatX4 __attribute__((ext_vector_type(4)));
  HalfX4 av, bv;
  __builtin_memcpy(&av, &a, sizeof av);
  __builtin_memcpy(&bv, &b, sizeof bv);
  FloatX4 cv = {c.v[0], c.v[1], c.v[2], c.v[3]};
  cv = __builtin_amdgcn_mfma_f32_16x16x16f16(av, bv, cv, 0, 0, 0);
  return MfmaFloats{{cv[0], cv[1], cv[2], cv[3]}};
#elif defined(LC0ROCM_MFMA_EMULATE)
  // Lane l's C[4 (l / 16) + i][l % 16] += sum over k of A[row][k] B[k][col],
  // A[row][k] held by lane row + 16 (k / 4) as element k % 4, B[k][col] by
  // lane col + 16 (k / 4). Every lane runs every shuffle.
  const int lane = static_cast<int>(threadIdx.x) % 64;
  const int col = lane % 16;
  for (int i = 0; i < 4; ++i) {
    const int row = 4 * (lane / 16) + i;
    float sum = c.v[i];
    for (int k = 0; k < 16; ++k) {
      const float x = __shfl(__half2float(a.v[k % 4]), row + 16 * (k / 4), 64);
      const float y = __shfl(__half2float(b.v[k % 4]), col + 16 * (k / 4), 64);
      sum += x * y;
    }
    c.v[i] = sum;
  }
  return c;
#else
  (void)a;
  (void)b;
  __builtin_trap();
  return c;
#endif
}

}  // namespace lc0rocm
