// plan/device.h - what a GPU can run, as the plan (plan/*.h) reads it.
// Plain C++ (no GPU headers): the CPU tests build it with the system
// compiler and describe the GPUs we know by their architecture names.
#pragma once
#include <cstddef>
#include <string>

namespace lc0rocm {

struct DeviceInfo {
  int device = 0;
  std::string arch;           // "sm_90", "gfx90a", ...
  bool nvidia = false;        // else AMD
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
  size_t shared_per_block = 0;    // bytes of shared memory a block may have, opted in
};

// The features of a GPU from its architecture name ("sm_86", "sm_90",
// "gfx90a", "gfx1100"; AMD feature suffixes such as ":sramecc+" ignored),
// with the facts the device reports: its warp width, multiprocessors and
// shared memory per block. sm90a_build: the library's device code was built
// for sm_90a (wgmma exists only there). The one place a feature follows
// from an architecture: network.cpp's query of a real device comes here
// too.
DeviceInfo device_from_arch(const std::string& arch, int warp_size, int multiprocessors, size_t shared_per_block,
                            bool sm90a_build);

}  // namespace lc0rocm
