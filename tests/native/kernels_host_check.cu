// Host-side check of the kernels with a 16-byte vector path (bias_act,
// im2col3x3 with and without the layer before's pending epilogue,
// se_apply): the vector path must give exactly what the
// one-element path gives, for float and half, with and without optional
// inputs, in place or not. Runs on the CPU (no GPU needed): the per-thread
// functions are __host__ __device__. Built by tests/test_native.py.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../native/src/kernels/bias_act.hip"
#include "../../native/src/kernels/im2col3x3.hip"
#include "../../native/src/kernels/se_apply.hip"

using namespace lc0rocm;

template <typename T>
static T* align16(std::vector<T>& v) {
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(v.data()) + 15) & ~uintptr_t(15));
}

template <typename T>
static bool same(T a, T b) {
  float fa = to_float(a), fb = to_float(b);
  return std::memcmp(&fa, &fb, sizeof(float)) == 0;
}

// With a bias, im2col finishes the layer before on the way (act(x + bias));
// the reference finishes x first and then takes plain neighbourhoods, so off
// the board must stay 0, not act(bias).
template <typename T>
static int check_im2col(int n, int channels, bool with_bias, Activation act, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const long long in = (long long)n * 64 * channels, out = in * 9;
  std::vector<T> x(in + 16), finished(in), ref(out), one_path(out), got(out + 16);
  std::vector<float> b(channels + 4);
  float* ba = reinterpret_cast<float*>(align16(b));
  T* xa = align16(x);
  T* ga = align16(got);
  for (int c = 0; c < channels; ++c) ba[c] = normal(rng);
  for (long long i = 0; i < in; ++i) {
    xa[i] = from_float<T>(normal(rng));
    finished[i] = with_bias ? from_float<T>(activate(to_float(xa[i]) + ba[i % channels], act)) : xa[i];
  }
  const float* bias = with_bias ? ba : nullptr;
  for (long long i = 0; i < out; ++i) { ref[i] = from_float<T>(7.0f); ga[i] = from_float<T>(-7.0f); }
  for (long long i = 0; i < out; ++i) im2col_detail::one(i, channels, finished.data(), ref.data(), nullptr, act);
  for (long long i = 0; i < out; ++i) im2col_detail::one(i, channels, xa, one_path.data(), bias, act);
  if (!im2col_detail::can_vectorize<T>(channels, xa, ga)) { std::printf("im2col not vectorizable\n"); return 1; }
  with_activation(act, [&](auto tag) {
    for (long long v = 0; v < out / im2col_detail::Vec<T>::kVec; ++v)
      im2col_detail::vector<T, decltype(tag)::value>(v, channels, xa, ga, bias, act);
  });
  for (long long i = 0; i < out; ++i)
    if (!same(ref[i], one_path[i]) || !same(ref[i], ga[i])) {
      std::printf("MISMATCH im2col %s n %d channels %d bias %d at %lld\n", sizeof(T) == 4 ? "float" : "half", n,
                  channels, int(with_bias), i);
      return 1;
    }
  return 0;
}

template <typename T>
static int check_se(int n, int channels, bool with_residual, bool in_place, Activation act, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.5f);
  const long long total = (long long)n * 64 * channels;
  std::vector<T> x(total + 16), res(total + 16), g(2LL * n * channels), ref(total), got(total + 16);
  T* xa = align16(x);
  T* ra = align16(res);
  T* ga = align16(got);
  for (long long i = 0; i < total; ++i) { xa[i] = from_float<T>(normal(rng)); ra[i] = from_float<T>(normal(rng)); }
  for (auto& v : g) v = from_float<T>(normal(rng));
  const T* r = with_residual ? ra : nullptr;
  for (long long i = 0; i < total; ++i) se_apply_detail::one(i, channels, xa, g.data(), r, ref.data(), act);
  T* out = in_place ? xa : ga;
  if (!se_apply_detail::can_vectorize<T>(channels, xa, r, out)) { std::printf("se not vectorizable\n"); return 1; }
  with_activation(act, [&](auto tag) {
    for (long long v = 0; v < total / se_apply_detail::Vec<T>::kVec; ++v)
      se_apply_detail::vector<T, decltype(tag)::value>(v, channels, xa, g.data(), r, out, act);
  });
  for (long long i = 0; i < total; ++i)
    if (!same(ref[i], out[i])) {
      std::printf("MISMATCH se_apply %s n %d channels %d res %d inplace %d at %lld\n",
                  sizeof(T) == 4 ? "float" : "half", n, channels, with_residual, in_place, i);
      return 1;
    }
  return 0;
}

template <typename T>
static int check(int rows, int channels, bool with_bias, bool with_residual, bool in_place,
                 Activation act, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  const long long total = (long long)rows * channels;
  // Extra room so the data pointer can be 16-byte aligned.
  std::vector<T> x(total + 16), res(total + 16), y_ref(total), y_vec(total + 16);
  T* xa = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(x.data()) + 15) & ~uintptr_t(15));
  T* ra = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(res.data()) + 15) & ~uintptr_t(15));
  T* ya = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(y_vec.data()) + 15) & ~uintptr_t(15));
  std::vector<float> bias(channels);
  for (long long i = 0; i < total; ++i) { xa[i] = from_float<T>(normal(rng)); ra[i] = from_float<T>(normal(rng)); }
  for (auto& b : bias) b = normal(rng);
  const float* b = with_bias ? bias.data() : nullptr;
  const T* r = with_residual ? ra : nullptr;
  for (long long i = 0; i < total; ++i) bias_act_detail::one(i, channels, xa, b, r, y_ref.data(), act);
  T* out = in_place ? xa : ya;
  if (!bias_act_detail::can_vectorize<T>(channels, xa, r, out)) {
    std::printf("not vectorizable: channels %d\n", channels);
    return 1;
  }
  const long long vectors = total / bias_act_detail::Vec<T>::kVec;
  // The vector path as the kernels run it: the activation fixed at compile
  // time (ReLU, none, Mish) against the reference's run-time switch.
  with_activation(act, [&](auto tag) {
    for (long long v = 0; v < vectors; ++v)
      bias_act_detail::vector<T, decltype(tag)::value>(v, channels, xa, b, r, out, act);
  });
  for (long long i = 0; i < total; ++i) {
    float want = to_float(y_ref[i]), got = to_float(out[i]);
    if (std::memcmp(&want, &got, sizeof(float)) != 0) {
      std::printf("MISMATCH %s rows %d channels %d bias %d res %d inplace %d act %d at %lld: %g vs %g\n",
                  sizeof(T) == 4 ? "float" : "half", rows, channels, with_bias, with_residual,
                  in_place, int(act), i, want, got);
      return 1;
    }
  }
  return 0;
}

int main() {
  std::mt19937 rng(1);
  int failures = 0, cases = 0;
  const Activation acts[] = {Activation::None, Activation::Relu, Activation::Mish, Activation::Relu2,
                             Activation::Selu};
  for (int channels : {8, 16, 24, 80, 768, 1024})
    for (int rows : {1, 3, 64})
      for (int mask = 0; mask < 8; ++mask)
        for (Activation act : acts) {
          bool bias = mask & 1, residual = mask & 2, in_place = mask & 4;
          failures += check<float>(rows, channels, bias, residual, in_place, act, rng);
          failures += check<half>(rows, channels, bias, residual, in_place, act, rng);
          cases += 2;
        }
  for (int channels : {8, 16, 64, 112, 128})
    for (int n : {1, 3}) {
      for (bool with_bias : {false, true})
        for (Activation act : {Activation::Relu, Activation::Mish}) {
          failures += check_im2col<float>(n, channels, with_bias, act, rng);
          failures += check_im2col<half>(n, channels, with_bias, act, rng);
          cases += 2;
        }
      for (int mask = 0; mask < 4; ++mask)
        for (Activation act : {Activation::Relu, Activation::Mish}) {
          failures += check_se<float>(n, channels, mask & 1, mask & 2, act, rng);
          failures += check_se<half>(n, channels, mask & 1, mask & 2, act, rng);
          cases += 2;
        }
    }
  // Rows that do not split into whole vectors must not take the vector path.
  float dummy[16] __attribute__((aligned(16)));
  if (bias_act_detail::can_vectorize<half>(12, dummy, nullptr, dummy)) { std::printf("12 channels vectorized\n"); ++failures; }
  if (bias_act_detail::can_vectorize<float>(8, dummy + 1, nullptr, dummy)) { std::printf("misaligned vectorized\n"); ++failures; }
  if (im2col_detail::can_vectorize<half>(12, dummy, dummy)) { std::printf("im2col 12 vectorized\n"); ++failures; }
  if (se_apply_detail::can_vectorize<float>(16, dummy, dummy + 2, dummy)) { std::printf("se misaligned vectorized\n"); ++failures; }
  std::printf("%d cases, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
