// SquareProduct: an n x n x n product, half in and out, float sums
// (cublasGemmEx, CUBLAS_COMPUTE_32F): how a GPU's fp16 matrix rate is
// usually measured, and how issue 9 measured the ~770-790 TFLOP/s its
// compute ceilings come from. Used by matrix_rate_bench (the rate alone) and
// energy_floor_bench (beside the net's products, at the power cap).
#pragma once
#include <cublas_v2.h>
#include <cuda_fp16.h>

#include "check_blas.cuh"
#include "check_cuda.cuh"
#include "random_fill.cuh"

#include <chrono>
#include <thread>

class SquareProduct {
 public:
  SquareProduct(cublasHandle_t blas, int n) : blas_(blas), n_(n) {
    const size_t count = size_t(n) * n;
    CHECK_CUDA(cudaMalloc(&a_, count * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&b_, count * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&c_, count * sizeof(__half)));
    fill_random<<<1024, 256>>>(a_, static_cast<long long>(count), 3u, 0.5f);  // random: zeros run faster
    fill_random<<<1024, 256>>>(b_, static_cast<long long>(count), 4u, 0.5f);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  ~SquareProduct() {
    cudaFree(a_);
    cudaFree(b_);
    cudaFree(c_);
  }
  SquareProduct(const SquareProduct&) = delete;
  SquareProduct& operator=(const SquareProduct&) = delete;

  double flop() const { return 2.0 * n_ * n_ * n_; }
  // One product, asynchronous on the cuBLAS handle's stream.
  void run() {
    const float one = 1.0f, zero = 0.0f;
    CHECK_BLAS(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, n_, n_, n_, &one, b_, CUDA_R_16F, n_, a_, CUDA_R_16F,
                            n_, &zero, c_, CUDA_R_16F, n_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  // TFLOP/s of a short burst from rest, as a one-off measurement runs: two
  // seconds idle, three products, then `reps` timed by events on `stream`
  // (the handle's). Short enough that the power cap has not yet slowed the
  // clock: the peak issue 9's ceilings assume.
  double burst_tflops(cudaStream_t stream, int reps) {
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (int i = 0; i < 3; ++i) run();
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < reps; ++i) run();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    return reps * flop() / (ms / 1e3) / 1e12;
  }

 private:
  cublasHandle_t blas_;
  int n_;
  __half *a_ = nullptr, *b_ = nullptr, *c_ = nullptr;
};
