// amd_matrix_tile.h - AMD's matrix instructions for one 16 x 16 x 16
// product of half matrices with float sums, a wave per product, as tile
// traits that one kernel is written against (attn_fused_attention_amd.hip):
//
//   CdnaMfma  - v_mfma_f32_16x16x16f16 (gfx908, gfx90a, gfx94x), waves of 64
//               lanes. Element i = 0..3 of lane l (the layout CDNA's
//               instruction defines; composable_kernel describes it as four
//               input blocks of 16 lanes along K and groups of 4 output rows):
//                 A [16 m][16 k]: A[l % 16][4 * (l / 16) + i]
//                 B [16 k][16 n]: B[4 * (l / 16) + i][l % 16]
//                 C [16 m][16 n]: C[4 * (l / 16) + i][l % 16]   (float)
//   RdnaWmma  - v_wmma_f32_16x16x16_f16 (gfx11), waves of 32 lanes; both
//               input fragments are the same in lanes l and l + 16:
//                 A [16 m][16 k]: A[l % 16][k],  k = 0..15 (a row of A)
//                 B [16 k][16 n]: B[k][l % 16],  k = 0..15 (a column of B)
//                 C [16 m][16 n]: C[2 i + l / 16][l % 16], i = 0..7 (float)
//
// Each gives: kWave, kRows (C elements a lane holds, all in its column
// l % 16), kRowPad (halves after each shared row, so fragment loads stay
// aligned and off-bank), fragment loads from a row-major tile in shared
// memory for the lane of lane group g = l / 16, the row of its C element i,
// and product(a, b, c) = C + A . B. A row of C lies in the 16
// lanes of one lane group (l / 16), so xor shuffles over 1, 2, 4 and 8
// reduce it in both.
//
// On the instruction's own targets the product is the compiler builtin (the
// accumulator handed in as a local value: Debian's clang 15 crashes at -O1
// and above on gfx11 when an accumulator loaded from memory goes straight
// into it). Under HIP-CPU with LC0ROCM_AMD_MATRIX_EMULATE
// (tests/native_attention_hipcpu.cpp) it is a shuffle emulation of the
// layout (RDNA's waves as 32-lane halves of HIP-CPU's 64-lane warps), so
// the kernels' indexing is checked on the CPU. Elsewhere (targets the
// launcher never gives these kernels) it traps.
//
// Why NVIDIA's tensor-core attention (attn_fused_attention_tc.hip) is not
// written against these traits: its mma.sync tiles are 16 x 8 x 16 with
// another register layout, its kernel pipelines the next item's loads
// (cp.async) under this item's products and was measured and tuned as it
// is (ATTENTION_FUSED.md); the AMD kernel is neither pipelined nor run on
// hardware. Sharing the tile arithmetic would change code that was timed
// for code that was not: the traits join the two AMD layouts only.
#pragma once

#include "../gpu_compat.h"

namespace lc0rocm {

// Max / sum over the 16 lanes of a lane group (xor 1..8 stays inside it).
__device__ __forceinline__ float lane_group_max(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v = fmaxf(v, gpu_shfl_xor(v, mask));
  return v;
}
__device__ __forceinline__ float lane_group_sum(float v) {
#pragma unroll
  for (int mask = 1; mask < 16; mask <<= 1) v += gpu_shfl_xor(v, mask);
  return v;
}

// A fragment as the builtin's vector type and back (same size, any
// alignment): a local value, never a load straight into the instruction.
template <typename To, typename From>
__device__ __forceinline__ To bit_copy(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "a fragment and its vector are the same size");
  To to;
  __builtin_memcpy(&to, &from, sizeof to);
  return to;
}

// Tile's product by shuffles in its layout, for HIP-CPU
// (LC0ROCM_AMD_MATRIX_EMULATE; its warps are 64 lanes, RDNA's waves their
// halves): lane l's C element i, at row Tile::c_row(g, i) and column l % 16,
// adds A[row][k] B[k][column] over k, A's row and B's column held by the
// lanes source_lane names. Every lane runs every shuffle. Elsewhere (targets
// the launcher never gives these kernels) it traps.
template <typename Tile>
__device__ typename Tile::Floats emulated_product(const typename Tile::Halves& a, const typename Tile::Halves& b,
                                                  typename Tile::Floats c) {
#if defined(LC0ROCM_AMD_MATRIX_EMULATE)
  const int lane = static_cast<int>(threadIdx.x) % 64;
  const int col = lane % 16, g = lane % Tile::kWave / 16;
  for (int i = 0; i < Tile::kRows; ++i) {
    const int row = Tile::c_row(g, i);
    float sum = c.v[i];
    for (int k = 0; k < 16; ++k) {
      const float x = __shfl(__half2float(a.v[Tile::element(k)]), Tile::source_lane(row, k, lane), 64);
      const float y = __shfl(__half2float(b.v[Tile::element(k)]), Tile::source_lane(col, k, lane), 64);
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

struct CdnaMfma {
  static constexpr int kWave = 64;
  static constexpr int kRows = 4;
  static constexpr int kRowPad = 4;  // 8 bytes: rows 8-byte aligned and off-bank
  struct Halves {
    __half v[4];
  };
  struct Floats {
    float v[4];
  };

  // The row of C element i of lane group g (its column: the lane % 16).
  __device__ static int c_row(int g, int i) { return 4 * g + i; }
  // For the emulation: the lane of HIP-CPU's 64-lane warp holding A's row r
  // (or B's column r) at k, as element element(k) of its fragment.
  __device__ static int source_lane(int r, int k, int) { return r + 16 * (k / 4); }
  __device__ static int element(int k) { return k % 4; }
  // A's fragment from row `row` of a tile (8-byte aligned rows, `pitch`
  // halves apart), k from k0; also B's where B = M^T for a row-major M
  // (B's column is M's row).
  __device__ static Halves row_fragment(const __half* tile, int row, int pitch, int k0, int g) {
    Halves f;
    *reinterpret_cast<uint2*>(&f) = *reinterpret_cast<const uint2*>(tile + row * pitch + k0 + 4 * g);
    return f;
  }
  // B's fragment down column `column` of a row-major B, k from k0.
  __device__ static Halves column_fragment(const __half* tile, int column, int pitch, int k0, int g) {
    Halves f;
#pragma unroll
    for (int j = 0; j < 4; ++j) f.v[j] = tile[(k0 + 4 * g + j) * pitch + column];
    return f;
  }

  __device__ static Floats product(const Halves& a, const Halves& b, Floats c) {
#if defined(LC0ROCM_MFMA_AVAILABLE)
    typedef _Float16 HalfX4 __attribute__((ext_vector_type(4)));
    typedef float FloatX4 __attribute__((ext_vector_type(4)));
    const FloatX4 d = __builtin_amdgcn_mfma_f32_16x16x16f16(bit_copy<HalfX4>(a), bit_copy<HalfX4>(b),
                                                            bit_copy<FloatX4>(c), 0, 0, 0);
    return bit_copy<Floats>(d);
#else
    return emulated_product<CdnaMfma>(a, b, c);
#endif
  }
};

struct RdnaWmma {
  static constexpr int kWave = 32;
  static constexpr int kRows = 8;
  static constexpr int kRowPad = 8;  // 16 bytes: rows stay 16-byte aligned
  struct alignas(16) Halves {
    __half v[16];
  };
  struct Floats {
    float v[8];
  };

  __device__ static int c_row(int g, int i) { return 2 * i + g; }
  // Each half of a HIP-CPU warp is one wave of 32.
  __device__ static int source_lane(int r, int, int warp_lane) { return warp_lane / 32 * 32 + r; }
  __device__ static int element(int k) { return k; }
  // 16-byte aligned rows.
  __device__ static Halves row_fragment(const __half* tile, int row, int pitch, int k0, int) {
    const __half* p = tile + row * pitch + k0;
    Halves f;
    reinterpret_cast<uint4*>(&f)[0] = reinterpret_cast<const uint4*>(p)[0];
    reinterpret_cast<uint4*>(&f)[1] = reinterpret_cast<const uint4*>(p)[1];
    return f;
  }
  __device__ static Halves column_fragment(const __half* tile, int column, int pitch, int k0, int) {
    Halves f;
#pragma unroll
    for (int j = 0; j < 16; ++j) f.v[j] = tile[(k0 + j) * pitch + column];
    return f;
  }

  __device__ static Floats product(const Halves& a, const Halves& b, Floats c) {
#if defined(LC0ROCM_RDNA_WMMA_AVAILABLE)
    typedef _Float16 HalfX16 __attribute__((ext_vector_type(16)));
    typedef float FloatX8 __attribute__((ext_vector_type(8)));
    const FloatX8 d = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(bit_copy<HalfX16>(a), bit_copy<HalfX16>(b),
                                                                 bit_copy<FloatX8>(c));
    return bit_copy<Floats>(d);
#else
    return emulated_product<RdnaWmma>(a, b, c);
#endif
  }
};

}  // namespace lc0rocm
