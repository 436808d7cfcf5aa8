// rdna_wmma_tile.h - AMD RDNA 3's matrix instruction for one 16 x 16 x 16
// product of half matrices with float sums (v_wmma_f32_16x16x16_f16), a wave
// of 32 lanes per product. A lane's fragments, l = its lane in the wave (the
// layout gfx11 defines; both input fragments are the same in lanes l and
// l + 16):
//   A [16 m][16 k]: A[l % 16][k],        k = 0..15 (a row of A)
//   B [16 k][16 n]: B[k][l % 16],        k = 0..15 (a column of B)
//   C [16 m][16 n]: C[2 i + l / 16][l % 16], i = 0..7  (float)
// rdna_wmma_16x16x16(a, b, c) returns C + A . B.
//
// On gfx11 it is the compiler builtin (the accumulator handed in as a local
// value: Debian's clang 15 crashes at -O1 and above when an accumulator
// loaded from memory goes straight into it). Under HIP-CPU with
// LC0ROCM_RDNA_WMMA_EMULATE (tests/native_attention_hipcpu.cpp) it is a
// shuffle emulation of that layout over 32-lane halves of HIP-CPU's 64-lane
// warps, so the kernels' indexing is checked on the CPU. Elsewhere (gfx12's
// WMMA has another layout; other targets, which the launcher never gives
// these kernels) it traps.
#pragma once

#include "../gpu_compat.h"

namespace lc0rocm {

struct alignas(16) RdnaHalves {
  __half v[16];
};
struct RdnaFloats {
  float v[8];
};

#if defined(__gfx1100__) || defined(__gfx1101__) || defined(__gfx1102__) || defined(__gfx1103__)
#define LC0ROCM_RDNA_WMMA_DEVICE 1
#endif

__device__ __forceinline__ RdnaFloats rdna_wmma_16x16x16(const RdnaHalves& a, const RdnaHalves& b, RdnaFloats c) {
#if defined(LC0ROCM_RDNA_WMMA_DEVICE)
  typedef _Float16 HalfX16 __attribute__((ext_vector_type(16)));
  typedef float FloatX8 __attribute__((ext_vector_type(8)));
  HalfX16 av, bv;
  __builtin_memcpy(&av, &a, sizeof av);
  __builtin_memcpy(&bv, &b, sizeof bv);
  FloatX8 cv;
#pragma unroll
  for (int i = 0; i < 8; ++i) cv[i] = c.v[i];
  cv = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(av, bv, cv);
  RdnaFloats d;
#pragma unroll
  for (int i = 0; i < 8; ++i) d.v[i] = cv[i];
  return d;
#elif defined(LC0ROCM_RDNA_WMMA_EMULATE)
  // Lane l's C[2 i + l / 16][l % 16] += sum over k of A[row][k] B[k][col],
  // A's row held by lane row as element k, B's column col by lane col.
  // Each half of a HIP-CPU warp is one wave; the shuffles name the source
  // lane in the whole 64-lane warp (HIP-CPU's 32-wide shuffles return the
  // lane's own value in the upper half). Every lane runs every shuffle.
  const int warp_lane = static_cast<int>(threadIdx.x) % 64;
  const int base = warp_lane / 32 * 32, lane = warp_lane % 32;
  const int col = lane % 16;
  for (int i = 0; i < 8; ++i) {
    const int row = 2 * i + lane / 16;
    float sum = c.v[i];
    for (int k = 0; k < 16; ++k) {
      const float x = __shfl(__half2float(a.v[k]), base + row, 64);
      const float y = __shfl(__half2float(b.v[k]), base + col, 64);
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
