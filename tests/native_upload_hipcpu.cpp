// CPU check of the weights' upload (tensor/weight_store.cpp, staged_upload.cpp)
// under HIP-CPU: float32 and LINEAR16 tensors, alone and joined, bigger than a
// staging slot and smaller, to float32 and half device buffers, read back and
// compared bit for bit with the host's own conversions (linear16.h,
// half_bits.h). Built and run by tests/test_linear16.py::test_weight_upload_under_hip_cpu;
// exit status 0 = all OK.
#include "tensor/staged_upload.cpp"
#include "tensor/weight_store.cpp"

#include <cstdio>
#include <random>
#include <vector>

using namespace lc0rocm;

static int fails = 0;

static void report(const char* what, bool ok) {
  std::printf("%-48s %s\n", what, ok ? "OK" : "FAIL");
  if (!ok) ++fails;
}

// The device buffer's bytes back on the host.
static std::vector<char> read_back(const DeviceBuffer& buf) {
  std::vector<char> out(buf.bytes());
  if (!out.empty()) GPU_CHECK(hipMemcpy(out.data(), buf.get(), out.size(), hipMemcpyDeviceToHost));
  return out;
}

// What the upload must hold: the spans' values one after the other, as `dtype`.
static std::vector<char> expected(const std::vector<FloatSpan>& parts, DType dtype) {
  std::vector<float> values;
  for (const FloatSpan& p : parts) {
    const size_t at = values.size();
    values.resize(at + p.count);
    if (p.linear16) {
      linear16_to_float(p.linear16, p.count, p.lo, p.span, values.data() + at);
    } else {
      std::copy(p.data, p.data + p.count, values.data() + at);
    }
  }
  std::vector<char> out(values.size() * dtype_size(dtype));
  if (dtype == DType::F16) {
    half_bits(values.data(), values.size(), reinterpret_cast<uint16_t*>(out.data()));
  } else {
    std::memcpy(out.data(), values.data(), out.size());
  }
  return out;
}

int main() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> step(0, 65535);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  // 5 M steps: 20 MB as float32, so a piece spans several 8 MiB slots and threads' slices.
  std::vector<uint16_t> big(5'000'003), small(1'001);
  for (auto& v : big) v = uint16_t(step(rng));
  for (auto& v : small) v = uint16_t(step(rng));
  std::vector<float> f32(3'000'001), one{7.0f};
  for (auto& v : f32) v = normal(rng);

  lc0rocm_tensor tensors[4] = {};
  tensors[0].name = "big";   tensors[0].data = big.data();   tensors[0].count = big.size();
  tensors[0].dtype = LC0ROCM_DTYPE_LINEAR16; tensors[0].lo = -0.731f; tensors[0].hi = 0.529f;
  tensors[1].name = "small"; tensors[1].data = small.data(); tensors[1].count = small.size();
  tensors[1].dtype = LC0ROCM_DTYPE_LINEAR16; tensors[1].lo = 1.5f; tensors[1].hi = 1.5f;   // a constant layer
  tensors[2].name = "f32";   tensors[2].data = f32.data();   tensors[2].count = f32.size();
  tensors[2].dtype = LC0ROCM_DTYPE_F32;
  tensors[3].name = "count"; tensors[3].data = one.data();   tensors[3].count = 1;
  tensors[3].dtype = LC0ROCM_DTYPE_F32;

  try {
    WeightStore store(tensors, 4);
    for (DType dtype : {DType::F32, DType::F16}) {
      const char* name = dtype == DType::F32 ? "f32" : "f16";
      char what[96];
      for (const char* tensor : {"big", "small", "f32"}) {
        DeviceBuffer buf = store.upload(tensor, dtype);
        store.finish_uploads();
        std::snprintf(what, sizeof what, "upload %s as %s", tensor, name);
        report(what, read_back(buf) == expected({store.span(tensor)}, dtype));
      }
      // Joined: LINEAR16 and float32 spans in one buffer, the slots reused between them.
      const std::vector<FloatSpan> joined{store.span("small"), store.span("f32"), store.span("big"),
                                          store.span("small")};
      DeviceBuffer buf = store.upload_values(joined, dtype);
      store.finish_uploads();
      std::snprintf(what, sizeof what, "joined spans as %s", name);
      report(what, read_back(buf) == expected(joined, dtype));
    }
    const std::vector<float>& decoded = store.floats("big", long(big.size()));
    std::vector<float> want(big.size());
    linear16_to_float(big.data(), big.size(), -0.731f, linear16_span(-0.731f, 0.529f), want.data());
    report("floats() of a LINEAR16 tensor", decoded == want);
    report("a constant LINEAR16 layer is its value", store.floats("small")[17] == 1.5f);
    report("scalar() of a float tensor", store.scalar("count") == 7);
    bool refused = false;
    try {
      store.floats("big", 12);
    } catch (const Error& e) {
      refused = e.status() == LC0ROCM_INVALID_ARGUMENT;
    }
    report("a LINEAR16 tensor's wrong count refused", refused);
  } catch (const Error& e) {
    std::printf("error: %s\n", e.what());
    return 2;
  }
  return fails ? 1 : 0;
}
