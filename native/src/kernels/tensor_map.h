// tensor_map.h - the TMA tensor maps of the sm_90 products (gemm_sm90.hip,
// gemm_sm90_layer_norm.hip, attn_qkv_attention_sm90.hip): row-major half
// matrices cut into boxes of box_rows x 64 halves (one 128-byte row each),
// 128-byte swizzled, the layout wgmma's operand descriptors (wgmma_tile.h)
// and the epilogues' shared boxes take.
// NVIDIA builds for sm_90a only (LC0ROCM_SM90A_BUILD).
#pragma once

#include "../gpu_compat.h"

#if defined(LC0ROCM_SM90A_BUILD)
#include <cuda.h>  // CUtensorMap

namespace lc0rocm {
namespace sm90 {

constexpr int kBoxCols = 64;  // halves: one 128-byte swizzle row

// Whether the driver offers cuTensorMapEncodeTiled (looked up once).
bool tensor_maps_available();

// `map` over matrix [rows][cols] (16-byte aligned, cols a multiple of 8) in
// boxes of box_rows x kBoxCols; rows past the end read as zeros and are not
// written. False where the driver refuses it.
bool tile_map(CUtensorMap* map, const void* matrix, long long rows, int cols, int box_rows);

}  // namespace sm90
}  // namespace lc0rocm
#endif
