// gemm_sm90_bench: the library's own Hopper product (kernels/gemm_sm90.hip,
// compiled into this program from the same source) against cuBLAS on the
// encoder products of t82 and bt4, one product at a time. Built and run by
// scripts/gemm_sm90_bench.py (NVIDIA sm_90 only). Prints one line per
// product and variant: microseconds, TFLOP/s and, for the plain product,
// the relative L2 difference from cuBLAS's output.
#include "kernels/gemm_sm90.hip"
#include "kernels/tensor_map.hip"  // the tensor maps gemm_sm90 builds (its own file since 490cb8e)

#include <cublas_v2.h>

#include "check_blas.cuh"
#include "check_cuda.cuh"
#include "random_fill.cuh"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
using lc0rocm::Activation;

// Mean microseconds of `reps` back-to-back runs of `launch`, after three.
template <typename Launch>
float time_us(int reps, Launch&& launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int r = -3; r < reps; ++r) {
    if (r == 0) CHECK_CUDA(cudaEventRecord(start));
    launch();
  }
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaGetLastError());
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ms * 1000.0f / reps;
}

// sqrt(sum (a - b)^2 / sum b^2); -1 where a holds a NaN.
double relative_difference(const __half* a, const __half* b, long long n) {
  std::vector<__half> ha(n), hb(n);
  CHECK_CUDA(cudaMemcpy(ha.data(), a, n * sizeof(__half), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hb.data(), b, n * sizeof(__half), cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (long long i = 0; i < n; ++i) {
    const double x = __half2float(ha[i]), r = __half2float(hb[i]);
    if (std::isnan(x)) return -1;
    num += (x - r) * (x - r);
    den += r * r;
  }
  return std::sqrt(num / den);
}

struct Product {
  const char* name;
  int N, K;
  Activation act;  // the FFN's first: its net's activation
};

}  // namespace

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 256;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 30;
  const long long M = 64LL * batch;
  int device = 0;
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  lc0rocm::DeviceInfo info;
  info.device = device;
  info.multiprocessors = prop.multiProcessorCount;
  info.wgmma = prop.major == 9 && prop.minor == 0;  // scripts/gemm_sm90_bench.py builds for sm_90a
  info.shared_per_block = lc0rocm::gpu_shared_per_block(prop);
  if (!lc0rocm::gemm_sm90_prepare(info)) {
    std::printf("gemm_sm90 does not run on %s (compute capability %d.%d)\n", prop.name, prop.major, prop.minor);
    return 2;
  }
  std::printf("%s, batch %d (%lld rows), %d runs each\n", prop.name, batch, M, reps);
  const Product products[] = {
      {"t82 qkv", 3 * 768, 768, Activation::None},   {"t82 out", 768, 768, Activation::None},
      {"t82 ffn1", 1024, 768, Activation::Relu2},    {"t82 ffn2", 768, 1024, Activation::None},
      {"bt4 qkv", 3 * 1024, 1024, Activation::None}, {"bt4 out", 1024, 1024, Activation::None},
      {"bt4 ffn1", 1536, 1024, Activation::Mish},    {"bt4 ffn2", 1024, 1536, Activation::None},
  };
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  for (const Product& p : products) {
    const int N = p.N, K = p.K;
    __half *x, *w, *y, *reference;
    float* bias;
    CHECK_CUDA(cudaMalloc(&x, M * K * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&w, static_cast<size_t>(N) * K * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&y, M * N * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&reference, M * N * sizeof(__half)));
    CHECK_CUDA(cudaMalloc(&bias, N * sizeof(float)));
    CHECK_CUDA(cudaMemset(bias, 0, N * sizeof(float)));
    fill_random<<<1024, 256>>>(x, M * K, 1, 2.0f);
    fill_random<<<1024, 256>>>(w, static_cast<long long>(N) * K, 7, 0.1f);
    const double flop = 2.0 * M * N * K;
    auto report = [&](const char* variant, float us, bool compare) {
      std::printf("%-9s %-30s %8.1f us %5.0f TFLOP/s", p.name, variant, us, flop / us / 1e6);
      if (compare) std::printf("  rel. difference %.1e", relative_difference(y, reference, M * N));
      std::printf("\n");
      CHECK_CUDA(cudaMemset(y, 0xFF, M * N * sizeof(__half)));  // NaN for the next variant
    };
    // y^T [N][M] = W [N][K] . x^T in cuBLAS's column-major terms.
    const float one = 1.0f, zero = 0.0f;
    const float blas_us = time_us(reps, [&] {
      CHECK_BLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, N, static_cast<int>(M), K, &one, w, CUDA_R_16F, K, x,
                              CUDA_R_16F, K, &zero, reference, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    std::printf("%-9s %-30s %8.1f us %5.0f TFLOP/s\n", p.name, "cublasGemmEx", blas_us, flop / blas_us / 1e6);
    // N a multiple of 256: float sums on the cooperative schedule, half
    // sums on the wide ping-pong one (else both ping-pong, float sums).
    struct Variant {
      const char* name;
      bool half_sums;
    } variants[] = {{"float sums", false}, {"half sums", true}};
    for (const Variant& v : variants) {
      bool ran = true;
      const float us = time_us(reps, [&] {
        ran = ran && lc0rocm::gemm_sm90(nullptr, info, M, N, K, x, w, nullptr, Activation::None, y, v.half_sums);
      });
      if (ran) report(v.name, us, true);
    }
    if (p.act != Activation::None) {
      char name[64];
      std::snprintf(name, sizeof name, "half sums, bias + %s", p.act == Activation::Mish ? "mish" : "relu^2");
      const float us =
          time_us(reps, [&] { lc0rocm::gemm_sm90(nullptr, info, M, N, K, x, w, bias, p.act, y, true); });
      report(name, us, false);
    }
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaFree(reference));
    CHECK_CUDA(cudaFree(bias));
  }
  CHECK_BLAS(cublasDestroy(blas));
  return 0;
}
