// plan/device.cpp - GPU features from the architecture name.
#include "device.h"

#include <cctype>
#include <cstring>

namespace lc0rocm {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.compare(0, std::strlen(prefix), prefix) == 0; }

// "sm_86" -> (8, 6), "sm_100" -> (10, 0): the last digit is the minor
// version. (0, 0) for anything else.
void nvidia_version(const std::string& arch, int* major, int* minor) {
  *major = *minor = 0;
  const std::string digits = arch.substr(3);
  if (digits.size() < 2) return;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return;
  *major = std::stoi(digits.substr(0, digits.size() - 1));
  *minor = digits.back() - '0';
}

}  // namespace

DeviceInfo device_from_arch(const std::string& arch_name, int warp_size, int multiprocessors, size_t shared_per_block,
                            bool sm90a_build) {
  DeviceInfo d;
  d.arch = arch_name.substr(0, arch_name.find(':'));  // "gfx90a:sramecc+:xnack-" -> "gfx90a"
  d.warp_size = warp_size;
  d.multiprocessors = multiprocessors;
  d.shared_per_block = shared_per_block;
  const std::string& a = d.arch;
  if (starts_with(a, "sm_")) {
    d.nvidia = true;
    int major = 0, minor = 0;
    nvidia_version(a, &major, &minor);
    d.fast_fp16 = major >= 7;  // tensor cores from Volta on
    d.mma_fp16 = major >= 8;
    d.tf32_products = major >= 8;
    d.dependent_launch = major >= 9;
    d.clusters = major >= 9;
    d.wgmma = sm90a_build && major == 9 && minor == 0;  // sm_90a's wgmma: later chips lack it
    return d;
  }
  // AMD. Packed/matrix fp16 from Vega 20 (gfx906) on: CDNA gfx908+, RDNA gfx10.3+, gfx11, gfx12.
  d.fast_fp16 = (starts_with(a, "gfx90") || starts_with(a, "gfx94") || starts_with(a, "gfx95") ||
                 starts_with(a, "gfx103") || starts_with(a, "gfx11") || starts_with(a, "gfx12")) &&
                !starts_with(a, "gfx900") && !starts_with(a, "gfx902");
  // v_mfma_f32_16x16x16f16 (CDNA); RDNA's matrix instructions differ.
  d.mfma_fp16 = starts_with(a, "gfx908") || starts_with(a, "gfx90a") || starts_with(a, "gfx94");
  // v_wmma_f32_16x16x16_f16 in the layout amd_matrix_tile.h assumes (gfx12's differs).
  d.rdna_wmma_fp16 = starts_with(a, "gfx11");
  // AMD's xf32 of gfx942 is untested here: float products stay float.
  return d;
}

}  // namespace lc0rocm
