// cublasGemmEx default vs the best of cublasLt's heuristic candidates, on the
// GEMM shapes of t82 / bt4 encoder layers, fp16 or true fp32 (CUBLAS_COMPUTE_32F,
// no TF32), random data, each timed inside a graph of 50 launches as the
// library runs them. Run through scripts/gemm_algorithms.py.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <random>

struct Shape { const char* name; int per_pos; int N; int K; };

static void fill(void* p, size_t count, bool half) {
  std::mt19937 rng(1); std::uniform_real_distribution<float> d(-1, 1);
  if (half) { std::vector<__half> h(count); for (auto& x : h) x = __float2half(d(rng)); cudaMemcpy(p, h.data(), count * 2, cudaMemcpyHostToDevice); }
  else { std::vector<float> h(count); for (auto& x : h) x = d(rng); cudaMemcpy(p, h.data(), count * 4, cudaMemcpyHostToDevice); }
}

double run(cublasHandle_t h, cublasLtHandle_t lt, void* ws, size_t wsb, int n, Shape s, bool half, double* best_sum) {
  int M = n * s.per_pos, N = s.N, K = s.K;
  size_t es = half ? 2 : 4;
  void *A, *B, *C;
  cudaMalloc(&A, size_t(M) * K * es); cudaMalloc(&B, size_t(N) * K * es); cudaMalloc(&C, size_t(M) * N * es);
  fill(A, size_t(M) * K, half); fill(B, size_t(N) * K, half);
  float alpha = 1, beta = 0;
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const int reps = 50;
  cudaStream_t st; cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cublasSetStream(h, st);
  auto timeit = [&](auto f) {
    for (int i = 0; i < 3; ++i) f();
    cudaStreamSynchronize(st);
    cudaGraph_t g; cudaGraphExec_t ge;
    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < reps; ++i) f();
    cudaStreamEndCapture(st, &g);
    cudaGraphInstantiateWithFlags(&ge, g, 0);
    cudaGraphLaunch(ge, st); cudaStreamSynchronize(st);
    float best = 1e9;
    for (int r = 0; r < 3; ++r) {
      cudaEventRecord(e0, st); cudaGraphLaunch(ge, st); cudaEventRecord(e1, st); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (ms < best) best = ms;
    }
    cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
    return best * 1000 / reps;
  };
  cudaDataType_t t = half ? CUDA_R_16F : CUDA_R_32F;
  float t_ex = timeit([&] {
    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, B, t, K, A, t, K, &beta, C, t, N,
                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  });
  cublasLtMatmulDesc_t d; cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t T = CUBLAS_OP_T, Nn = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T);
  cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &Nn, sizeof Nn);
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, t, K, N, K);
  cublasLtMatrixLayoutCreate(&lb, t, K, M, K);
  cublasLtMatrixLayoutCreate(&lc, t, N, M, N);
  cublasLtMatmulPreference_t p; cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
  cublasLtMatmulHeuristicResult_t res[32]; int got = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, p, 32, res, &got);
  float t0 = 0, best = 1e9; int bi = -1;
  for (int i = 0; i < got; ++i) {
    float tt = timeit([&] {
      cublasLtMatmul(lt, d, &alpha, B, la, A, lb, &beta, C, lc, C, lc, &res[i].algo, ws, wsb, st);
    });
    if (i == 0) t0 = tt;
    if (tt < best) best = tt, bi = i;
  }
  printf("  n=%3d %-8s M=%6d N=%5d K=%5d  gemmEx %7.2f  lt[0] %7.2f  best %7.2f (#%d of %d)\n",
         n, s.name, M, N, K, t_ex, t0, best, bi, got);
  cublasLtMatmulPreferenceDestroy(p); cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc); cublasLtMatmulDescDestroy(d);
  cudaFree(A); cudaFree(B); cudaFree(C); cublasSetStream(h, 0); cudaStreamDestroy(st);
  *best_sum += best < t_ex ? best : t_ex;
  return t_ex;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: probe t82|bt4 fp16|fp32 BATCHES (e.g. 1,16,64) WORKSPACE_KB\n");
    return 2;
  }
  const char* net = argv[1]; bool half = strcmp(argv[2], "fp16") == 0;
  std::vector<int> batches; for (char* b = strtok(argv[3], ","); b; b = strtok(nullptr, ",")) batches.push_back(atoi(b));
  cublasHandle_t h; cublasCreate(&h);
  cublasLtHandle_t lt; cublasLtCreate(&lt);
  // The workspace both APIs may use, in KB (the library gives cuBLAS 32 MB;
  // 0: no workspace, so no split products and no counters to zero).
  size_t wsb = size_t(atol(argv[4])) << 10;
  void* ws = nullptr; if (wsb) cudaMalloc(&ws, wsb);
  cublasSetWorkspace(h, ws, wsb);
  std::vector<Shape> shapes;
  if (strcmp(net, "t82") == 0)
    shapes = {{"qkv", 64, 2304, 768}, {"out", 64, 768, 768}, {"ffn1", 64, 1024, 768}, {"ffn2", 64, 768, 1024},
              {"sg_comp", 64, 32, 768}, {"sg_d1", 1, 256, 2048}, {"sg_d2", 1, 6144, 256}, {"sg_glob", 24, 4096, 256}};
  else
    shapes = {{"qkv", 64, 3072, 1024}, {"out", 64, 1024, 1024}, {"ffn1", 64, 1536, 1024}, {"ffn2", 64, 1024, 1536},
              {"sg_comp", 64, 32, 1024}, {"sg_d1", 1, 256, 2048}, {"sg_d2", 1, 8192, 256}, {"sg_glob", 32, 4096, 256}};
  for (int n : batches) {
    double ex = 0, best = 0;
    for (auto& s : shapes) ex += run(h, lt, ws, wsb, n, s, half, &best);
    printf("%s %s n=%d: per layer gemmEx %.1f us, best-of %.1f us (%.1f%%), x15 layers saves %.0f us\n",
           net, argv[2], n, ex, best, 100 * (ex - best) / ex, 15 * (ex - best));
  }
}
