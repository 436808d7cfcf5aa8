// energy_floor_bench: what an attention net's products alone cost in energy
// on this GPU, against its idle draw and a DRAM copy. Built and run by
// scripts/energy_floor.py (NVIDIA sm_90 only).
//
// Why: from batch ~64 the H100 runs at its power cap, so a pass's speed is
// its energy (BENCHMARKS.md, "The GPU at its power cap"). The encoder
// products (Q|K|V with smolgen's compress, output, FFN first and second,
// smolgen's dense1, dense2 and generator) are work no kernel change removes:
// their joules a position, at the cap, bound how fast the whole pass can
// run. Each phase runs for the given seconds and reports NVML's energy
// counter around it:
//   idle      nothing launched: the board's draw at rest;
//   products  one pass's products (cublasGemmEx, half in and out, float
//             accumulation; captured into a graph), replayed;
//   half acc  the same products accumulated in half (CUBLAS_COMPUTE_16F,
//             as lc0's cuda backend computes its fp16 products): what the
//             narrower accumulators save in joules;
//   copy      device-to-device copies of 1 GiB: joules a byte moved;
//   square    an 8192^3 product (square_product.cuh): the GPU's fp16
//             matrix rate as a short burst from rest (how issue 9 measured
//             the rate its compute ceilings assume), then held for the
//             seconds given, at the cap, with its joules a FLOP.
// NVML is opened at run time (libnvidia-ml.so.1 from the driver): no header
// or link-time dependency.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include "check_blas.cuh"
#include "check_cuda.cuh"
#include "random_fill.cuh"
#include "square_product.cuh"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// The few NVML calls used, looked up in the driver's library.
class Nvml {
 public:
  Nvml() {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (lib_ == nullptr) fail("libnvidia-ml.so.1 not found (energy needs an NVIDIA driver)");
    using Init = int (*)();
    using Handle = int (*)(unsigned, void**);
    call<Init>("nvmlInit_v2");
    if (call<Handle>("nvmlDeviceGetHandleByIndex_v2", 0u, &device_) != 0) fail("no NVML device 0");
  }
  // Millijoules since the driver loaded.
  unsigned long long energy_mj() {
    unsigned long long mj = 0;
    if (call<int (*)(void*, unsigned long long*)>("nvmlDeviceGetTotalEnergyConsumption", device_, &mj) != 0)
      fail("nvmlDeviceGetTotalEnergyConsumption failed");
    return mj;
  }
  unsigned sm_clock_mhz() {
    unsigned mhz = 0;
    call<int (*)(void*, int, unsigned*)>("nvmlDeviceGetClockInfo", device_, 1 /* NVML_CLOCK_SM */, &mhz);
    return mhz;
  }

 private:
  template <typename F, typename... Args>
  int call(const char* name, Args... args) {
    void* f = dlsym(lib_, name);
    if (f == nullptr) fail(name);
    return reinterpret_cast<F>(f)(args...);
  }
  [[noreturn]] static void fail(const char* what) {
    std::fprintf(stderr, "energy_floor_bench: NVML: %s\n", what);
    std::exit(1);
  }
  void* lib_ = nullptr;
  void* device_ = nullptr;
};

// One phase's reading: wall seconds, joules, repetitions of its unit of work
// and the median SM clock sampled between them.
struct Reading {
  double seconds = 0, joules = 0;
  long long reps = 0;
  unsigned clock_mhz = 0;
  double watts() const { return joules / seconds; }
};

// Runs `work` (one unit, asynchronous on stream) in bursts of `burst` until
// `seconds` have passed, after a warm-up second, NVML's counter around it.
template <typename Work>
Reading run_phase(Nvml& nvml, cudaStream_t stream, double seconds, int burst, Work&& work) {
  using Clock = std::chrono::steady_clock;
  auto elapsed = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const Clock::time_point warm = Clock::now();
  while (elapsed(warm) < 1.0) {  // to the clock the cap settles at
    for (int i = 0; i < burst; ++i) work();
    CHECK_CUDA(cudaStreamSynchronize(stream));
  }
  Reading r;
  std::vector<unsigned> clocks;
  const unsigned long long e0 = nvml.energy_mj();
  const Clock::time_point t0 = Clock::now();
  while (elapsed(t0) < seconds) {
    for (int i = 0; i < burst; ++i) work();
    CHECK_CUDA(cudaStreamSynchronize(stream));
    r.reps += burst;
    clocks.push_back(nvml.sm_clock_mhz());
  }
  r.seconds = elapsed(t0);
  r.joules = (nvml.energy_mj() - e0) / 1000.0;
  std::sort(clocks.begin(), clocks.end());
  r.clock_mhz = clocks.empty() ? 0 : clocks[clocks.size() / 2];
  return r;
}

// y[M][N] = x[M][K] . w[N][K]^T, row-major, as the library's dense layers.
struct Product {
  const char* name;
  long long M;
  int N, K;
  double flop() const { return 2.0 * M * N * K; }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 10) {
    std::fprintf(stderr, "usage: energy_floor_bench EMBEDDING HEADS DFF LAYERS SMOLGEN_HIDDEN SMOLGEN_DENSE1 "
                         "SMOLGEN_GEN BATCH SECONDS\n");
    return 2;
  }
  int v[9];
  for (int i = 0; i < 9; ++i) v[i] = std::atoi(argv[i + 1]);
  const int E = v[0], heads = v[1], dff = v[2], layers = v[3], hidden = v[4], dense1 = v[5], gen = v[6];
  const int batch = v[7];
  const double seconds = v[8];
  if (*std::min_element(v, v + 9) < 1) {
    std::fprintf(stderr, "energy_floor_bench: every argument must be positive\n");
    return 2;
  }
  const long long rows = 64LL * batch;
  const std::vector<Product> products = {
      {"Q|K|V + compress", rows, 3 * E + hidden, E},
      {"output", rows, E, E},
      {"FFN first", rows, dff, E},
      {"FFN second", rows, E, dff},
      {"smolgen dense1", batch, dense1, 64 * hidden},
      {"smolgen dense2", batch, heads * gen, dense1},
      {"smolgen generator", static_cast<long long>(batch) * heads, 64 * 64, gen},
  };
  // One buffer for every x, one for every y, one for every w: the largest
  // each product needs (the values do not matter beyond being random).
  long long x_max = 0, y_max = 0, w_max = 0;
  double flop_layer = 0;
  for (const Product& p : products) {
    x_max = std::max(x_max, p.M * p.K);
    y_max = std::max(y_max, p.M * p.N);
    w_max = std::max(w_max, static_cast<long long>(p.N) * p.K);
    flop_layer += p.flop();
  }
  __half *x, *y, *w;
  CHECK_CUDA(cudaMalloc(&x, x_max * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&y, y_max * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&w, layers * w_max * sizeof(__half)));  // each layer its own weights, as a pass reads them
  fill_random<<<1024, 256>>>(x, x_max, 1u, 0.5f);
  fill_random<<<1024, 256>>>(w, layers * w_max, 2u, 0.5f);
  CHECK_CUDA(cudaGetLastError());

  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasSetStream(blas, stream));
  const float one = 1.0f, zero = 0.0f;
  const __half one_h = __float2half(1.0f), zero_h = __float2half(0.0f);
  auto product = [&](const Product& p, const __half* weights, bool half_accumulation) {
    // Column-major: y^T [N][M] = w [N][K] . x^T [K][M].
    const void* alpha = half_accumulation ? static_cast<const void*>(&one_h) : &one;
    const void* beta = half_accumulation ? static_cast<const void*>(&zero_h) : &zero;
    CHECK_BLAS(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, p.N, static_cast<int>(p.M), p.K, alpha, weights,
                            CUDA_R_16F, p.K, x, CUDA_R_16F, p.K, beta, y, CUDA_R_16F, p.N,
                            half_accumulation ? CUBLAS_COMPUTE_16F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  };
  // One pass's products as a graph, each layer its own weights.
  auto capture_pass = [&](bool half_accumulation) {
    for (const Product& p : products) product(p, w, half_accumulation);  // cuBLAS's first calls outside it
    CHECK_CUDA(cudaStreamSynchronize(stream));
    cudaGraph_t graph;
    cudaGraphExec_t pass;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < layers; ++l)
      for (const Product& p : products) product(p, w + l * w_max, half_accumulation);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&pass, graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
    return pass;
  };
  const cudaGraphExec_t float_pass = capture_pass(false);
  const cudaGraphExec_t half_pass = capture_pass(true);

  Nvml nvml;
  std::printf("batch %d, %d layers, %.2f GFLOP a position in the products\n", batch, layers,
              flop_layer * layers / batch / 1e9);

  Reading idle;
  {
    const unsigned long long e0 = nvml.energy_mj();
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    idle.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    idle.joules = (nvml.energy_mj() - e0) / 1000.0;
    idle.clock_mhz = nvml.sm_clock_mhz();
  }
  std::printf("idle      %6.1f W\n", idle.watts());

  const double flop_pass = flop_layer * layers;
  auto products_phase = [&](const char* label, cudaGraphExec_t pass) {
    const Reading run = run_phase(nvml, stream, seconds, 4, [&] { CHECK_CUDA(cudaGraphLaunch(pass, stream)); });
    const double positions = static_cast<double>(run.reps) * batch;
    std::printf("%-9s %6.1f W, %.0f positions/s, %.1f TFLOP/s, %.2f mJ a position, %.3f pJ a FLOP, SM %u MHz\n",
                label, run.watts(), positions / run.seconds, run.reps * flop_pass / run.seconds / 1e12,
                run.joules / positions * 1e3, run.joules / (run.reps * flop_pass) * 1e12, run.clock_mhz);
  };
  products_phase("products", float_pass);
  products_phase("half acc", half_pass);

  const size_t copy_bytes = size_t(1) << 30;
  void *a, *b;
  CHECK_CUDA(cudaMalloc(&a, copy_bytes));
  CHECK_CUDA(cudaMalloc(&b, copy_bytes));
  CHECK_CUDA(cudaMemsetAsync(a, 1, copy_bytes, stream));
  const Reading copy = run_phase(nvml, stream, seconds, 8, [&] {
    CHECK_CUDA(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, stream));
  });
  const double moved = 2.0 * copy_bytes * copy.reps;  // read and written
  std::printf("copy      %6.1f W, %.2f TB/s read + written, %.1f pJ a byte (%.1f above idle), SM %u MHz\n",
              copy.watts(), moved / copy.seconds / 1e12, copy.joules / moved * 1e12,
              (copy.joules - idle.watts() * copy.seconds) / moved * 1e12, copy.clock_mhz);

  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));

  // The fp16 matrix rate (square_product.cuh): a burst from rest, then held at the cap.
  {
    SquareProduct square(blas, 8192);
    const int burst_reps = 20;
    std::printf("square burst %.1f TFLOP/s (8192^3, %d products after 3, from rest)\n",
                square.burst_tflops(stream, burst_reps), burst_reps);
    const Reading held = run_phase(nvml, stream, seconds, 8, [&] { square.run(); });
    std::printf("square    %6.1f W, %.1f TFLOP/s, %.3f pJ a FLOP, SM %u MHz\n", held.watts(),
                held.reps * square.flop() / held.seconds / 1e12, held.joules / (held.reps * square.flop()) * 1e12,
                held.clock_mhz);
  }
  CHECK_CUDA(cudaGraphExecDestroy(float_pass));
  CHECK_CUDA(cudaGraphExecDestroy(half_pass));
  CHECK_BLAS(cublasDestroy(blas));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(w));
  return 0;
}
