// CHECK_CUDA(call): the benchmark programs' error check; a failed CUDA
// runtime call prints itself and its error and ends the program. A .cuh:
// the bench programs are CUDA programs, outside the library, whose vendor
// names stay in gpu_compat.h (tests/test_native.py).
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_CUDA(call)                                              \
  do {                                                                \
    const cudaError_t e = (call);                                     \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)
