// mma_tile.h - NVIDIA's mma.sync m16n8k16 tensor-core tile on half with
// float accumulation, for the kernels that load its fragments by hand
// (conv3x3_implicit, resnet_tower, the fused attention, smolgen_generate).
// Device code of NVIDIA
// builds only (sm_80+; below that the product is left out).
#pragma once
#include <cstdint>

#include "../gpu_compat.h"

#if defined(LC0ROCM_VENDOR_NVIDIA)
namespace lc0rocm {

// Two neighbouring halves as one 32-bit fragment register.
__device__ __forceinline__ uint32_t load_half_pair(const half* p) { return *reinterpret_cast<const uint32_t*>(p); }

// d += a . b on one 16 x 8 x 16 tile. PTX ISA "mma.m16n8k16" fragments:
// lane l = 4g + t holds A rows g and g + 8 at columns 2t, 2t + 1 (a0, a1)
// and 2t + 8, 2t + 9 (a2, a3); B column g at rows 2t, 2t + 1 (b0) and
// 2t + 8, 2t + 9 (b1); D rows g (d0, d1) and g + 8 (d2, d3) at columns 2t,
// 2t + 1.
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// d += a . b over a chunk of 32 k, from 16-byte vectors as loaded whole:
// `top` and `bottom` hold A rows g and g + 8 at k 8t .. 8t + 7 (lane 4g + t),
// `w` holds B column g at the same k. The product does not care which k a
// fragment slot holds as long as A and B agree, so lane t's 8 columns serve
// as its slots {2t, 2t + 1, 2t + 8, 2t + 9} of both k-steps (.x .y the
// first, .z .w the second): no ldmatrix, no shuffles.
__device__ __forceinline__ void mma_16x8x32_vectors(float (&d)[4], const uint4& top, const uint4& bottom,
                                                    const uint4& w) {
  mma_16x8x16(d, top.x, bottom.x, top.y, bottom.y, w.x, w.y);
  mma_16x8x16(d, top.z, bottom.z, top.w, bottom.w, w.z, w.w);
}

// A row stride in halves for rows of `k` halves in shared memory, read 16
// bytes a lane as above: rows g and g + 1 at one column (a phase of 8
// lanes) land on distinct banks when the stride is 64 bytes past a multiple
// of 128.
__host__ __device__ constexpr int vector_row_stride(int k) {
  const int bytes = 2 * k;
  return (bytes + ((64 - bytes % 128) + 128) % 128) / 2;
}

// Four 8 x 8 half matrices from shared memory in mma fragment order
// (ldmatrix): lanes 8i .. 8i + 7 give the row addresses (16 bytes each) of
// matrix i, and lane l = 4g + t gets r[i] = matrix i's row g, columns 2t and
// 2t + 1 (the A, B and D fragments' pair layout above). _trans gets the
// transposed matrices: r[i] = column g, rows 2t and 2t + 1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
#endif
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
#if defined(LC0ROCM_MMA_AVAILABLE)
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
#endif
}

}  // namespace lc0rocm
#endif
