// CHECK_BLAS(call): the benchmark programs' cuBLAS check, beside CHECK_CUDA
// (check_cuda.cuh); a failed cuBLAS call prints itself and its status and
// ends the program, so no failed product is timed or compared.
#pragma once
#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_BLAS(call)                                             \
  do {                                                               \
    const cublasStatus_t s = (call);                                 \
    if (s != CUBLAS_STATUS_SUCCESS) {                                \
      std::fprintf(stderr, "%s: cuBLAS status %d\n", #call, int(s)); \
      std::exit(1);                                                  \
    }                                                                \
  } while (0)
