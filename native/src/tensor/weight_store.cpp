#include "weight_store.h"

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
    if (t.dtype == LC0ROCM_DTYPE_F32) {
      const float* p = static_cast<const float*>(t.data);
      h.f32.assign(p, p + t.count);
    } else if (t.dtype == LC0ROCM_DTYPE_I32) {
      const int32_t* p = static_cast<const int32_t*>(t.data);
      h.i32.assign(p, p + t.count);
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

const std::vector<float>& WeightStore::floats(const std::string& name, long long expected) const {
  const HostTensor& t = find(name);
  if (t.dtype != LC0ROCM_DTYPE_F32) fail(LC0ROCM_INVALID_ARGUMENT, "weight tensor " + name + " is not float32");
  check_count(name, t.f32.size(), expected);
  return t.f32;
}

const std::vector<int32_t>& WeightStore::ints(const std::string& name, long long expected) const {
  const HostTensor& t = find(name);
  if (t.dtype != LC0ROCM_DTYPE_I32) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " is not int32");
  check_count(name, t.i32.size(), expected);
  return t.i32;
}

size_t WeightStore::count(const std::string& name) const { return find(name).count(); }

int WeightStore::scalar(const std::string& name) const {
  const HostTensor& t = find(name);
  if (t.count() != 1) fail(LC0ROCM_INVALID_ARGUMENT, "tensor " + name + " is not a scalar");
  return t.dtype == LC0ROCM_DTYPE_I32 ? t.i32[0] : static_cast<int>(t.f32[0]);
}

DeviceBuffer upload_floats(const std::vector<float>& values, DType dtype) {
  DeviceBuffer buf(values.size() * dtype_size(dtype));
  if (values.empty()) return buf;
  if (dtype == DType::F32) {
    GPU_CHECK(hipMemcpy(buf.get(), values.data(), buf.bytes(), hipMemcpyHostToDevice));
  } else {
    std::vector<half> h(values.size());
    for (size_t i = 0; i < values.size(); ++i) h[i] = __float2half(values[i]);
    GPU_CHECK(hipMemcpy(buf.get(), h.data(), buf.bytes(), hipMemcpyHostToDevice));
  }
  return buf;
}

DeviceBuffer WeightStore::upload(const std::string& name, DType dtype, long long expected) const {
  return upload_floats(floats(name, expected), dtype);
}

DeviceBuffer WeightStore::upload_f32(const std::string& name, long long expected) const {
  return upload(name, DType::F32, expected);
}

DeviceBuffer WeightStore::upload_i32(const std::string& name, long long expected) const {
  const std::vector<int32_t>& v = ints(name, expected);
  DeviceBuffer buf(v.size() * sizeof(int32_t));
  if (!v.empty()) GPU_CHECK(hipMemcpy(buf.get(), v.data(), buf.bytes(), hipMemcpyHostToDevice));
  return buf;
}

}  // namespace lc0rocm
