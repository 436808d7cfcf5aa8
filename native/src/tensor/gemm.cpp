#include "gemm.h"

#include <string>

namespace lc0rocm {

static void check_blas(hipblasStatus_t status, const char* what) {
  if (status != HIPBLAS_STATUS_SUCCESS)
    fail(LC0ROCM_DEVICE_ERROR, std::string(what) + " failed with BLAS status " + std::to_string(int(status)));
}

Blas::Blas(hipStream_t stream, bool tune, std::shared_ptr<GemmChoices> choices) : workspace_(size_t(32) << 20) {
  check_blas(hipblasCreate(&handle_), "blas create");
  try {
    check_blas(hipblasSetStream(handle_, stream), "blas set stream");
    check_blas(gpu_blas_set_workspace(handle_, workspace_.get(), workspace_.bytes()), "blas workspace");
    if (tune) tuner_ = GemmTuner::create(handle_, stream, std::move(choices));
  } catch (...) {
    hipblasDestroy(handle_);
    throw;
  }
}

Blas::~Blas() {
  tuner_.reset();  // before the handle it times hipblasGemmEx on
  if (handle_) hipblasDestroy(handle_);
}

static hipDataType data_type(DType t) { return t == DType::F32 ? HIP_R_32F : HIP_R_16F; }

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so BLAS
// gets B first, then A, with M and N swapped.
void Blas::product(hipDataType t, hipblasComputeType_t compute, bool trans_a, bool trans_b, int M,
                   int N, int K, const void* A, int lda, const void* B, int ldb, void* C, int ldc,
                   float alpha, float beta) {
  if (M == 0 || N == 0) return;
  if (tuner_ && t == HIP_R_16F && compute == HIPBLAS_COMPUTE_32F &&
      tuner_->product(trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc, alpha, beta))
    return;
  check_blas(hipblasGemmEx(handle_, trans_b ? HIPBLAS_OP_T : HIPBLAS_OP_N,
                           trans_a ? HIPBLAS_OP_T : HIPBLAS_OP_N, N, M, K, &alpha,
                           B, t, ldb, A, t, lda, &beta, C, t, ldc, compute, HIPBLAS_GEMM_DEFAULT),
             "gemm");
}

void Blas::gemm(DType dtype, bool trans_a, bool trans_b, int M, int N, int K,
                const void* A, int lda, const void* B, int ldb, void* C, int ldc,
                float alpha, float beta) {
  product(data_type(dtype), HIPBLAS_COMPUTE_32F, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc,
          alpha, beta);
}

void Blas::gemm_tf32(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda,
                     const float* B, int ldb, float* C, int ldc) {
  product(HIP_R_32F, HIPBLAS_COMPUTE_32F_FAST_TF32, trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc,
          1.0f, 0.0f);
}

void Blas::gemm_strided_batched(DType dtype, bool trans_a, bool trans_b, int M, int N, int K,
                                const void* A, int lda, long long stride_a,
                                const void* B, int ldb, long long stride_b,
                                void* C, int ldc, long long stride_c, int batch,
                                float alpha, float beta) {
  if (M == 0 || N == 0 || batch == 0) return;
  hipDataType t = data_type(dtype);
  check_blas(hipblasGemmStridedBatchedEx(handle_, trans_b ? HIPBLAS_OP_T : HIPBLAS_OP_N,
                                         trans_a ? HIPBLAS_OP_T : HIPBLAS_OP_N, N, M, K, &alpha,
                                         B, t, ldb, stride_b, A, t, lda, stride_a, &beta,
                                         C, t, ldc, stride_c, batch,
                                         HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT),
             "strided batched gemm");
}

}  // namespace lc0rocm
