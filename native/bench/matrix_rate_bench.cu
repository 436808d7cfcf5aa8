// matrix_rate_bench: this GPU's fp16 matrix rate, as issue 9 measured the
// ~770-790 TFLOP/s its compute ceilings come from: short bursts of N x N x N
// products from rest (square_product.cuh), the best of BURSTS. A ceiling is
// the most the GPU does: a warm chip or a busy neighbour only lowers a burst
// (one H200 gave 757-768 TFLOP/s, the lowest right after other benchmarks).
// Built and run by scripts/gpu_bench.py (the ceiling step), NVIDIA sm_90 only.
//   usage: matrix_rate_bench N REPS BURSTS
// Prints one line: "fp16 matrix rate <best> TFLOP/s (<N>^3, best of <BURSTS>
// bursts of <REPS> products after 3, from rest: <each>)".
#include <cublas_v2.h>

#include "check_blas.cuh"
#include "check_cuda.cuh"
#include "square_product.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: matrix_rate_bench N REPS BURSTS\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), reps = std::atoi(argv[2]), bursts = std::atoi(argv[3]);
  if (n < 16 || n % 16 != 0 || reps < 1 || bursts < 1) {
    std::fprintf(stderr, "matrix_rate_bench: N must be a positive multiple of 16, REPS and BURSTS positive\n");
    return 2;
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetStream(blas, stream));
  std::vector<double> rates;
  {
    SquareProduct square(blas, n);
    for (int i = 0; i < bursts; ++i) rates.push_back(square.burst_tflops(stream, reps));
  }
  std::string each;
  for (double r : rates) {
    char one[32];
    std::snprintf(one, sizeof one, "%s%.1f", each.empty() ? "" : ", ", r);
    each += one;
  }
  std::printf("fp16 matrix rate %.1f TFLOP/s (%d^3, best of %d bursts of %d products after 3, from rest: %s)\n",
              *std::max_element(rates.begin(), rates.end()), n, bursts, reps, each.c_str());
  CHECK_BLAS(cublasDestroy(blas));
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
