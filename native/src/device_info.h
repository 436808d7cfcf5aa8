// device_info.h - facts of the GPU a pass runs on, read from the device
// (never assumed), for host code that sizes launches: kept apart from
// body.h so kernel files can take it without the BLAS headers.
#pragma once
#include <cstddef>

namespace lc0rocm {

struct DeviceInfo {
  int device = 0;
  int warp_size = 0;
  int multiprocessors = 0;
  bool fast_fp16 = false;     // packed/matrix fp16 (NVIDIA: tensor cores, compute capability 7.0 on)
  bool mma_fp16 = false;      // mma.sync m16n8k16 on half (NVIDIA compute capability 8.0 on)
  bool mfma_fp16 = false;     // 16x16x16 half MFMA (AMD CDNA: gfx908, gfx90a, gfx94x)
  bool rdna_wmma_fp16 = false;  // 16x16x16 half WMMA in RDNA 3's layout (AMD gfx11)
  bool tf32_products = false; // BLAS float products on tf32 tensor cores (NVIDIA 8.0 on)
  bool dependent_launch = false;  // kernels may start before the prior one ends (gpu_compat.h)
  bool clusters = false;          // thread block clusters with distributed shared memory (gpu_compat.h)
  bool wgmma = false;             // warpgroup products and TMA, built for them (sm_90a; gpu_compat.h)
  size_t shared_per_block = 0;  // bytes of shared memory a block may have, opted in
};

}  // namespace lc0rocm
