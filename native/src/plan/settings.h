// plan/settings.h - the settings a network runs with: the GPU backends'
// options (lc0_rocm/backends/native.py's OPTIONS), carried in
// lc0rocm_config and read once, when the network is created
// (network.cpp). Plain C++.
#pragma once
#include "../../include/lc0rocm.h"

namespace lc0rocm {

struct Settings {
  // Defaults as native.py's OPTIONS (tests/test_native_plan.py compares them).
  bool graphs = true;
  bool gemm_tune = true;
  bool half_sums = true;
  bool side_stream = true;
  int dependent_launch = LC0ROCM_DEPENDENT_LAUNCH_AUTO;  // 1 / 0: always / never
  int mapped_io = 1;  // passes of up to this many positions (padded) in mapped host memory; 0: never
  unsigned disabled = 0;  // LC0ROCM_PATH_* bits
  unsigned forced = 0;

  bool off(unsigned path) const { return (disabled & path) != 0; }
  bool forced_on(unsigned path) const { return (forced & path) != 0; }
};

}  // namespace lc0rocm
