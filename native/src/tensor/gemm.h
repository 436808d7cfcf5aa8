// gemm.h - matrix products through hipBLAS (AMD) / cuBLAS (NVIDIA).
//
// All matrices are ROW-major here; the wrapper turns that into BLAS's
// column-major call. Storage is float or half (DType), accumulation is always
// float32 (tensor cores for half on NVIDIA, matrix cores on AMD).
#pragma once
#include <memory>

#include "device_buffer.h"
#include "dtype.h"
#include "errors.h"
#include "gemm_tuner.h"

namespace lc0rocm {

// One BLAS handle bound to one stream. Each lc0rocm_stream owns one.
class Blas {
 public:
  // tune: half products on the algorithm that timed fastest for their shape
  // (gemm_tuner.h; the gemm_tune setting), else hipblasGemmEx's own choice.
  // choices: the network's algorithm choices, shared by its streams.
  Blas(hipStream_t stream, bool tune, std::shared_ptr<GemmChoices> choices);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // C[M][N] = alpha * op(A)[M][K] . op(B)[K][N] + beta * C, row-major.
  // op(A) = A (stored M x K, lda >= K) or A^T (stored K x M, lda >= M);
  // likewise B. A dense layer with weights W[out][in] on X[n][in] is
  // gemm(dt, false, true, n, out, in, X, in, W, in, Y, out).
  void gemm(DType dtype, bool trans_a, bool trans_b, int M, int N, int K,
            const void* A, int lda, const void* B, int ldb, void* C, int ldc,
            float alpha = 1.0f, float beta = 0.0f);

  // The same in float storage on tf32 tensor cores: each input keeps 10
  // mantissa bits. Float-accurate only on operands split by tf32_split
  // (kernels/ops.h), which the caller arranges.
  void gemm_tf32(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                 const float* B, int ldb, float* C, int ldc);

  // `batch` independent products; stride_* are in elements (0 reuses one matrix).
  void gemm_strided_batched(DType dtype, bool trans_a, bool trans_b, int M, int N, int K,
                            const void* A, int lda, long long stride_a,
                            const void* B, int ldb, long long stride_b,
                            void* C, int ldc, long long stride_c, int batch,
                            float alpha = 1.0f, float beta = 0.0f);

 private:
  // Both gemm()s: storage type t, accumulation `compute`.
  void product(hipDataType t, hipblasComputeType_t compute, bool trans_a, bool trans_b, int M, int N,
               int K, const void* A, int lda, const void* B, int ldb, void* C, int ldc, float alpha,
               float beta);

  hipblasHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;  // fixed, so GEMMs can be captured in graphs
  std::unique_ptr<GemmTuner> tuner_;  // half products by timed algorithm; null: hipblasGemmEx's own choice
};

}  // namespace lc0rocm
