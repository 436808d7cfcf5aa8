// CPU check of the attention kernels' warp-level code under HIP-CPU, whose
// warps are 64 wide (AMD CDNA's width; the GPU runs check 32). Built and run
// by tests/test_native_attention.py::test_kernels_under_hip_cpu, which first
// rewrites the kernel sources into HIP-CPU's dialect (dynamic shared memory
// through HIP_DYNAMIC_SHARED; launches go through gpu_launch's
// hipLaunchKernelGGL).
// Each kernel is compared with a plain C++ reference; exit status 0 = all OK.
// The AMD attention's matrix instructions are emulated by shuffles in the
// layouts CDNA's MFMA and RDNA 3's WMMA define, the latter over 32-lane
// halves of the warps (kernels/amd_matrix_tile.h, LC0ROCM_AMD_MATRIX_EMULATE).
#define LC0ROCM_AMD_MATRIX_EMULATE 1
#include <cmath>
// HIP-CPU has no rsqrtf.
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
#include "kernels/attn_layer_norm.hip"
#include "kernels/attn_layer_norm_half.hip"
#include "kernels/attn_unfused.hip"
#include "kernels/attn_fused_attention.hip"
#include "kernels/attn_fused_attention_amd.hip"
#include "kernels/attn_embedding.hip"
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
using namespace lc0rocm;
using namespace lc0rocm::attn;
static std::mt19937 rng(1);
std::vector<float> rnd(size_t n, float s = 1.f) { std::normal_distribution<float> d(0, s); std::vector<float> v(n); for (auto& x : v) x = d(rng); return v; }
double maxdiff(const std::vector<float>& a, const std::vector<float>& b) { double m = 0; for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (double)std::fabs(a[i] - b[i])); return m; }
float swish(float x) { return x / (1 + std::exp(-x)); }
int fails = 0;
void report(const char* what, double d, double tol) { printf("%-40s maxdiff %.3g %s\n", what, d, d <= tol ? "OK" : "FAIL"); if (!(d <= tol)) ++fails; }

// wide_from_rows: layer_norm's (1: rows over 256 vectors on the 256-thread kernel at any count).
void test_ln(int rows, int cols, int wide_from_rows = limits::kWideNormDefaultRows) {
  auto in = rnd(rows * cols), skip = rnd(rows * cols), bias = rnd(cols), g = rnd(cols), b = rnd(cols);
  std::vector<float> out(rows * cols, NAN), ref(rows * cols);
  float alpha = 0.7f, eps = 1e-3f;
  for (int r = 0; r < rows; ++r) {
    std::vector<float> v(cols); double mean = 0;
    for (int c = 0; c < cols; ++c) { v[c] = swish(in[r*cols+c] + bias[c]) * alpha + skip[r*cols+c]; mean += v[c]; }
    mean /= cols; double var = 0; for (int c = 0; c < cols; ++c) var += (v[c]-mean)*(v[c]-mean); var /= cols;
    for (int c = 0; c < cols; ++c) ref[r*cols+c] = (v[c]-mean)/std::sqrt(var+eps)*g[c]+b[c];
  }
  layer_norm<float>(out.data(), in.data(), bias.data(), skip.data(), g.data(), b.data(), rows, cols, alpha, eps, Activation::Swish, 64, nullptr, wide_from_rows);
  hipDeviceSynchronize();
  char name[64]; snprintf(name, 64, "layer_norm rows %d cols %d wide %d", rows, cols, wide_from_rows);
  report(name, maxdiff(out, ref), 1e-4);
}

void test_softmax(int rows) {
  auto in = rnd(rows * 64, 3), add = rnd(rows * 64);
  std::vector<float> out(rows * 64, NAN), ref(rows * 64);
  for (int r = 0; r < rows; ++r) { float m = -1e30; for (int c = 0; c < 64; ++c) m = std::max(m, in[r*64+c]+add[r*64+c]);
    double s = 0; for (int c = 0; c < 64; ++c) s += std::exp(in[r*64+c]+add[r*64+c]-m);
    for (int c = 0; c < 64; ++c) ref[r*64+c] = std::exp(in[r*64+c]+add[r*64+c]-m)/s; }
  softmax64<float>(out.data(), in.data(), add.data(), rows, 64, nullptr);
  hipDeviceSynchronize();
  report("softmax64", maxdiff(out, ref), 1e-6);
}

// qkv rows w wide: Q|K|V's 3 * heads * depth values first (smolgen's
// compressed channels may follow, as where they share Q|K|V's product).
void attention_ref(std::vector<float>& out, const std::vector<float>& qkv, int w, const std::vector<float>& bias, const float* gen, int batch, int heads, int depth) {
  int dm = heads * depth;
  for (int n = 0; n < batch; ++n) for (int h = 0; h < heads; ++h) for (int q = 0; q < 64; ++q) {
    std::vector<double> s(64); double m = -1e30;
    for (int k = 0; k < 64; ++k) { double a = 0; for (int d = 0; d < depth; ++d) a += (qkv[(n*64+q)*w + h*depth+d] + bias[h*depth+d]) * (qkv[(n*64+k)*w + dm + h*depth+d] + bias[dm+h*depth+d]);
      a /= std::sqrt((double)depth); if (gen) a += gen[((n*heads+h)*64+q)*64+k]; s[k] = a; m = std::max(m, a); }
    double sum = 0; for (int k = 0; k < 64; ++k) { s[k] = std::exp(s[k]-m); sum += s[k]; }
    for (int d = 0; d < depth; ++d) { double o = 0; for (int k = 0; k < 64; ++k) o += s[k]/sum * (qkv[(n*64+k)*w + 2*dm + h*depth+d] + bias[2*dm+h*depth+d]); out[(n*64+q)*dm + h*depth+d] = o; }
  }
}

// extra: values after Q|K|V in each row (rows 3 * heads * depth + extra wide).
void test_attention(int batch, int heads, int depth, bool smol, int extra = 0) {
  int dm = heads * depth, w = 3 * dm + extra;
  auto qkv = rnd(batch * 64 * w), bias = rnd(3 * dm), gen = rnd(batch * heads * 4096);
  std::vector<float> out(batch * 64 * dm, NAN), ref(batch * 64 * dm);
  attention_ref(ref, qkv, w, bias, smol ? gen.data() : nullptr, batch, heads, depth);
  fused_attention<float>(out.data(), qkv.data(), w, bias.data(), smol ? gen.data() : nullptr, batch, heads, depth, 64, nullptr);
  hipDeviceSynchronize();
  char name[64]; snprintf(name, 64, "fused_attention b%d h%d d%d smol%d extra%d", batch, heads, depth, smol, extra);
  report(name, maxdiff(out, ref), 1e-4);
  if (extra != 0) return;  // split_heads reads rows of Q|K|V alone
  // split + merge round trip (merge of v-part gives v + bias)
  std::vector<float> q(batch*64*dm), k(batch*64*dm), v(batch*64*dm), merged(batch*64*dm, NAN), vref(batch*64*dm);
  split_heads<float>(q.data(), k.data(), v.data(), qkv.data(), bias.data(), batch, heads, depth, nullptr);
  merge_heads<float>(merged.data(), v.data(), batch, heads, depth, nullptr);
  hipDeviceSynchronize();
  for (int r = 0; r < batch*64; ++r) for (int c = 0; c < dm; ++c) vref[r*dm+c] = qkv[r*3*dm + 2*dm + c] + bias[2*dm + c];
  report("split_heads + merge_heads (v)", maxdiff(merged, vref), 0);
}

// AMD's matrix-instruction kernels (MFMA for CDNA, WMMA for RDNA 3): each
// with the device it asks for (its instruction's flag and wave width), the
// flag as a member so the decline checks can clear it.
using HalfAttention = bool (*)(__half*, const __half*, int, const float*, const __half*, int, int, int,
                               const DeviceInfo&, hipStream_t);
struct MatrixKernel {
  const char* name;
  HalfAttention run;
  bool DeviceInfo::*flag;
  int wave;  // the instruction's wave width
  DeviceInfo device() const {
    DeviceInfo d;
    d.warp_size = wave;
    d.multiprocessors = 1;
    d.*flag = true;
    return d;
  }
};
const MatrixKernel kMfma{"fused_attention_amd (MFMA)", fused_attention_amd, &DeviceInfo::mfma_fp16, 64};
// RDNA 3's waves of 32 are the halves of HIP-CPU's 64-lane warps.
const MatrixKernel kRdna{"fused_attention_amd (RDNA WMMA)", fused_attention_amd, &DeviceInfo::rdna_wmma_fp16, 32};

// On half storage (Q|K|V and smolgen's logits rounded to half first, so the
// reference sees the kernel's inputs).
void test_attention_matrix(const MatrixKernel& kernel, int batch, int heads, int depth, bool smol, int extra = 0) {
  int dm = heads * depth, w = 3 * dm + extra;
  auto qkv = rnd(batch * 64 * w), bias = rnd(3 * dm), gen = rnd(batch * heads * 4096);
  std::vector<__half> hqkv(qkv.size()), hgen(gen.size()), hout(batch * 64 * dm, __float2half(NAN));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = __half2float(hqkv[i] = __float2half(qkv[i]));
  for (size_t i = 0; i < gen.size(); ++i) gen[i] = __half2float(hgen[i] = __float2half(gen[i]));
  std::vector<float> out(batch * 64 * dm), ref(batch * 64 * dm);
  attention_ref(ref, qkv, w, bias, smol ? gen.data() : nullptr, batch, heads, depth);
  const bool ran = kernel.run(hout.data(), hqkv.data(), w, bias.data(), smol ? hgen.data() : nullptr, batch, heads,
                              depth, kernel.device(), nullptr);
  hipDeviceSynchronize();
  for (size_t i = 0; i < out.size(); ++i) out[i] = __half2float(hout[i]);
  char name[80]; snprintf(name, 80, "%s b%d h%d d%d smol%d extra%d", kernel.name, batch, heads, depth, smol, extra);
  report(name, ran ? maxdiff(out, ref) : INFINITY, 2e-2);
}

// Where such a kernel does not apply it launches nothing and says so: depth
// 48, an odd row stride, a device without its instruction, the other wave
// width.
void test_attention_matrix_declines(const MatrixKernel& kernel) {
  std::vector<__half> buf(64 * 3 * 48 + 64);
  std::vector<float> bias(3 * 48);
  DeviceInfo device = kernel.device();
  const bool depth48 = kernel.run(buf.data(), buf.data(), 3 * 48, bias.data(), nullptr, 1, 1, 48, device, nullptr);
  const bool odd_stride = kernel.run(buf.data(), buf.data(), 3 * 32 + 1, bias.data(), nullptr, 1, 1, 32, device, nullptr);
  device.*kernel.flag = false;
  const bool no_instruction = kernel.run(buf.data(), buf.data(), 3 * 32, bias.data(), nullptr, 1, 1, 32, device, nullptr);
  device = kernel.device();
  device.warp_size = 96 - kernel.wave;  // 32 <-> 64
  const bool other_wave = kernel.run(buf.data(), buf.data(), 3 * 32, bias.data(), nullptr, 1, 1, 32, device, nullptr);
  char name[80]; snprintf(name, 80, "%s declines", kernel.name);
  report(name, depth48 || odd_stride || no_instruction || other_wave ? 1 : 0, 0);
}

void test_ln_half(int rows, int cols, int wide_from_rows = limits::kWideNormDefaultRows) {
  auto in = rnd(rows * cols), skip = rnd(rows * cols), bias = rnd(cols), g = rnd(cols), b = rnd(cols);
  std::vector<__half> hin(rows * cols), hskip(rows * cols), hout(rows * cols);
  for (int i = 0; i < rows * cols; ++i) { hin[i] = __float2half(in[i]); skip[i] = __half2float(hskip[i] = __float2half(skip[i])); in[i] = __half2float(hin[i]); }
  std::vector<float> out(rows * cols), ref(rows * cols);
  float alpha = 0.7f, eps = 1e-3f;
  for (int r = 0; r < rows; ++r) {
    std::vector<float> v(cols); double mean = 0;
    for (int c = 0; c < cols; ++c) { v[c] = swish(in[r*cols+c] + bias[c]) * alpha + skip[r*cols+c]; mean += v[c]; }
    mean /= cols; double var = 0; for (int c = 0; c < cols; ++c) var += (v[c]-mean)*(v[c]-mean); var /= cols;
    for (int c = 0; c < cols; ++c) ref[r*cols+c] = (v[c]-mean)/std::sqrt(var+eps)*g[c]+b[c];
  }
  layer_norm<__half>(hout.data(), hin.data(), bias.data(), hskip.data(), g.data(), b.data(), rows, cols, alpha, eps, Activation::Swish, 64, nullptr, wide_from_rows);
  hipDeviceSynchronize();
  for (int i = 0; i < rows * cols; ++i) out[i] = __half2float(hout[i]);
  char name[64]; snprintf(name, 64, "layer_norm half rows %d cols %d wide %d", rows, cols, wide_from_rows);
  report(name, maxdiff(out, ref), 2e-2);
}

float mish(float x) { return x * std::tanh(std::log1p(std::exp(x))); }

// x = act(x + bias) * mult + add, mult and add [64][channels]; T's vector
// path where channels and the pointers allow (offset: elements the rows
// start past a 16-byte boundary, 0 or not), else a block per row.
template <typename T>
void test_input_gating(int batch, int channels, bool with_bias, int offset) {
  const int rows = batch * 64;
  auto x = rnd(rows * channels), mult = rnd(64 * channels), add = rnd(64 * channels), bias = rnd(channels);
  std::vector<T> buf(offset + rows * channels);
  for (int i = 0; i < rows * channels; ++i) { buf[offset + i] = from_float<T>(x[i]); x[i] = to_float<T>(buf[offset + i]); }
  std::vector<float> ref(rows * channels), out(rows * channels);
  for (int r = 0; r < rows; ++r) for (int c = 0; c < channels; ++c) {
    const int w = (r % 64) * channels + c;
    const float v = with_bias ? mish(x[r*channels+c] + bias[c]) : x[r*channels+c];
    ref[r*channels+c] = v * mult[w] + add[w];
  }
  input_gating<T>(buf.data() + offset, with_bias ? bias.data() : nullptr, with_bias ? Activation::Mish : Activation::None,
                  mult.data(), add.data(), batch, channels, nullptr);
  hipDeviceSynchronize();
  for (int i = 0; i < rows * channels; ++i) out[i] = to_float<T>(buf[offset + i]);
  char name[80]; snprintf(name, 80, "input_gating %s b%d c%d bias%d offset%d", sizeof(T) == 2 ? "half" : "float", batch,
                          channels, with_bias, offset);
  report(name, maxdiff(out, ref), sizeof(T) == 2 ? 3e-2 : 1e-5);
}

int main() {
  test_input_gating<float>(3, 64, true, 0); test_input_gating<float>(2, 96, false, 0);
  test_input_gating<float>(2, 36, true, 1); test_input_gating<__half>(3, 64, true, 0);
  test_input_gating<__half>(2, 72, false, 0); test_input_gating<__half>(2, 20, true, 0);
  test_ln_half(9, 768); test_ln_half(1100, 768); test_ln_half(8300, 256); test_ln_half(9, 100); test_ln_half(3, 3000); test_ln_half(3, 2052);
  test_ln(4, 99); test_ln(2, 3001);
  test_ln(37, 96); test_ln(3, 768); test_ln(8300, 96); test_ln(5, 3000); test_ln(2, 6144); test_ln(3, 8192);
  // smolgen's second layer norm on 256-thread blocks: 2-8 vectors a thread, a partial last one.
  test_ln_half(3, 8192, 1); test_ln_half(260, 6144); test_ln_half(3, 3000, 1); test_ln(3, 8192, 1); test_ln(5, 3000, 1);
  test_softmax(50);
  test_attention(2, 2, 16, true); test_attention(2, 3, 32, true); test_attention(1, 2, 48, false); test_attention(1, 1, 7, true);
  test_attention(2, 2, 16, true, 8); test_attention(1, 3, 32, true, 32);
  for (const MatrixKernel* kernel : {&kMfma, &kRdna}) {
    test_attention_matrix(*kernel, 2, 3, 32, true); test_attention_matrix(*kernel, 3, 2, 16, true);
    test_attention_matrix(*kernel, 1, 2, 32, false); test_attention_matrix(*kernel, 2, 3, 32, true, 32);
    test_attention_matrix_declines(*kernel);
  }
  printf("%s\n", fails ? "FAILURES" : "all OK");
  return fails != 0;
}
