// device_info.h - facts of the GPU a pass runs on, read from the device
// (never assumed), for host code that sizes launches: kept apart from
// body.h so kernel files can take it without the BLAS headers.
#pragma once

namespace lc0rocm {

struct DeviceInfo {
  int device = 0;
  int warp_size = 0;
  int multiprocessors = 0;
  bool fast_fp16 = false;     // packed/matrix fp16 (NVIDIA: tensor cores, compute capability 7.0 on)
};

}  // namespace lc0rocm
