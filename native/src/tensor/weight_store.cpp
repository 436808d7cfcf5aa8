#include "weight_store.h"

#include "linear16.h"

namespace lc0rocm {

WeightStore::WeightStore(const lc0rocm_tensor* tensors, int count) {
  if (count < 0 || (count > 0 && tensors == nullptr)) fail(LC0ROCM_INVALID_ARGUMENT, "no tensors given");
  for (int i = 0; i < count; ++i) {
    const lc0rocm_tensor& t = tensors[i];
    if (t.name == nullptr) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + std::to_string(i) + " has no name");
    std::string name(t.name);
    if (t.count < 0 || (t.count > 0 && t.data == nullptr))
      fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + ": no data for " + std::to_string(t.count) + " elements");
    if (tensors_.count(name)) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " given twice");
    HostTensor h;
    h.dtype = t.dtype;
    h.n = static_cast<size_t>(t.count);
    if (t.dtype == LC0ROCM_DTYPE_F32) {
      h.f32 = static_cast<const float*>(t.data);
    } else if (t.dtype == LC0ROCM_DTYPE_I32) {
      h.i32 = static_cast<const int32_t*>(t.data);
    } else if (t.dtype == LC0ROCM_DTYPE_LINEAR16) {
      h.linear16 = static_cast<const uint16_t*>(t.data);
      h.lo = t.lo;
      h.span = linear16_span(t.lo, t.hi);
    } else {
      fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + ": unknown dtype " + std::to_string(t.dtype));
    }
    tensors_.emplace(std::move(name), std::move(h));
  }
}

const HostTensor& WeightStore::find(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(LC0ROCM_INVALID_ARGUMENT, "missing weight tensor " + name);
  return it->second;
}

static void check_count(const std::string& name, size_t have, long long expected) {
  if (expected >= 0 && have != static_cast<size_t>(expected))
    fail(LC0ROCM_INVALID_ARGUMENT, "weight tensor " + name + " has " + std::to_string(have) +
                                       " elements, expected " + std::to_string(expected));
}

const HostTensor& WeightStore::float_tensor(const std::string& name, long long expected) const {
  const HostTensor& t = find(name);
  if (t.dtype != LC0ROCM_DTYPE_F32 && t.dtype != LC0ROCM_DTYPE_LINEAR16)
    fail(LC0ROCM_INVALID_ARGUMENT, "weight tensor " + name + " is not float32");
  check_count(name, t.n, expected);
  return t;
}

const std::vector<float>& WeightStore::floats(const std::string& name, long long expected) const {
  const HostTensor& t = float_tensor(name, expected);
  if (t.f32_copy.size() != t.n) {
    if (t.linear16) {
      t.f32_copy.resize(t.n);
      linear16_to_float(t.linear16, t.n, t.lo, t.span, t.f32_copy.data());
    } else {
      t.f32_copy.assign(t.f32, t.f32 + t.n);
    }
  }
  return t.f32_copy;
}

const std::vector<int32_t>& WeightStore::ints(const std::string& name, long long expected) const {
  const HostTensor& t = find(name);
  if (t.dtype != LC0ROCM_DTYPE_I32) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " is not int32");
  check_count(name, t.n, expected);
  if (t.i32_copy.size() != t.n) t.i32_copy.assign(t.i32, t.i32 + t.n);
  return t.i32_copy;
}

size_t WeightStore::count(const std::string& name) const { return find(name).count(); }

int WeightStore::scalar(const std::string& name) const {
  const HostTensor& t = find(name);
  if (t.count() != 1) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " is not a scalar");
  if (t.dtype == LC0ROCM_DTYPE_I32) return t.i32[0];
  return static_cast<int>(floats(name)[0]);
}

FloatSpan WeightStore::span(const std::string& name, long long expected) const {
  const HostTensor& t = float_tensor(name, expected);
  return FloatSpan{t.f32, t.n, t.linear16, t.lo, t.span};
}

DeviceBuffer WeightStore::upload_values(const std::vector<FloatSpan>& parts, DType dtype) const {
  return staging_.upload(parts, dtype);
}

DeviceBuffer WeightStore::upload_values(const std::vector<float>& values, DType dtype) const {
  return staging_.upload({FloatSpan{values.data(), values.size()}}, dtype);
}

DeviceBuffer WeightStore::upload(const std::string& name, DType dtype, long long expected) const {
  return staging_.upload({span(name, expected)}, dtype);   // from the caller's memory: no copy
}

DeviceBuffer WeightStore::upload_f32(const std::string& name, long long expected) const {
  return upload(name, DType::F32, expected);
}

DeviceBuffer WeightStore::upload_i32(const std::string& name, long long expected) const {
  const HostTensor& t = find(name);
  if (t.dtype != LC0ROCM_DTYPE_I32) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " is not int32");
  check_count(name, t.n, expected);
  DeviceBuffer buf(t.n * sizeof(int32_t));
  if (t.n) GPU_CHECK(hipMemcpy(buf.get(), t.i32, buf.bytes(), hipMemcpyHostToDevice));
  return buf;
}

}  // namespace lc0rocm
