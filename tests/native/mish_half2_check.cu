// GPU check of mish_half2 (native/src/kernels/activation.h), the half-pair
// Mish of gemm_sm90's epilogue: every finite half value and a float sweep
// through the device function, against Mish in double. Prints the error
// figures and "0 failures" when every value is within the bound; NaN must
// stay NaN and +inf stay +inf. Built and run by tests/test_native.py.
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/activation.h"

using namespace lc0rocm;

__global__ void mish_pairs(const float* x, __half* y, int n) {
  const int i = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i + 1 >= n) return;
  const __half2 r = activate_pair_as<Activation::Mish>(x[i], x[i + 1], Activation::Mish);
  y[i] = __low2half(r);
  y[i + 1] = __high2half(r);
}

static double mish(double x) { return x * std::tanh(std::log1p(std::exp(x))); }

int main() {
  std::vector<float> x;
  for (int bits = 0; bits < 0x10000; ++bits) {  // every finite half
    const float v = __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    if (std::isfinite(v)) x.push_back(v);
  }
  for (int i = 0; i <= 400000; ++i) x.push_back(-20.0f + 40.0f * i / 400000.0f);  // floats between halves
  const size_t finite = x.size();
  x.push_back(NAN); x.push_back(INFINITY);
  if (x.size() % 2) x.push_back(0.0f);
  const int n = static_cast<int>(x.size());
  float* dx; __half* dy;
  if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess || cudaMalloc(&dy, n * sizeof(__half)) != cudaSuccess) {
    std::printf("no device memory\n");
    return 2;
  }
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  mish_pairs<<<(n / 2 + 255) / 256, 256>>>(dx, dy, n);
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("launch failed\n");
    return 2;
  }
  std::vector<__half> y(n);
  if (cudaMemcpy(y.data(), dy, n * sizeof(__half), cudaMemcpyDeviceToHost) != cudaSuccess) {
    std::printf("kernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  // Bound: the half path's error model (ex2.f16x2 within 2^-9.9, half
  // arithmetic) gives at most ~5e-3 relative where |mish| matters, and
  // ~1e-5 absolute for the tiny values of x < -9.
  int failures = 0;
  double worst = 0.0, ulp_sum = 0.0, ulp_max = 0.0;
  long ulp_count = 0;
  for (size_t i = 0; i < finite; ++i) {
    const double want = mish(x[i]);
    const double got = __half2float(y[i]);
    const double want_half = __half2float(__double2half(want));
    if (!std::isfinite(want_half)) continue;  // beyond half's range either way
    const double err = std::fabs(got - want), bound = 8e-3 * std::fabs(want) + 2e-5;
    if (!(err <= bound)) {
      if (failures++ < 10) std::printf("x=%.8g: got %.8g, want %.8g\n", x[i], got, want);
    }
    worst = std::fmax(worst, err / bound);
    if (std::fabs(x[i]) <= 4.0f && want_half != 0.0) {
      const double ulp = std::ldexp(1.0, std::ilogb(std::fabs(want_half)) - 10);
      const double u = std::fabs(got - want_half) / ulp;
      ulp_sum += u; ulp_max = std::fmax(ulp_max, u); ++ulp_count;
    }
  }
  const float nan_out = __half2float(y[finite]), inf_out = __half2float(y[finite + 1]);
  if (!std::isnan(nan_out)) { ++failures; std::printf("NaN in, %g out\n", nan_out); }
  if (!(std::isinf(inf_out) && inf_out > 0)) { ++failures; std::printf("+inf in, %g out\n", inf_out); }
  std::printf("%zu values; worst error / bound %.3f; |x| <= 4: mean %.2f, max %.1f half ulps from Mish rounded\n",
              finite, worst, ulp_sum / ulp_count, ulp_max);
  std::printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
