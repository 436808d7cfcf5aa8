#include "weight_store.h"

#include <algorithm>
#include <memory>
#include <system_error>
#include <thread>

#include "half_bits.h"

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
  if (t.dtype != LC0ROCM_DTYPE_F32) fail(LC0ROCM_INVALID_ARGUMENT, "weight tensor " + name + " is not float32");
  check_count(name, t.n, expected);
  return t;
}

const std::vector<float>& WeightStore::floats(const std::string& name, long long expected) const {
  const HostTensor& t = float_tensor(name, expected);
  if (t.f32_copy.size() != t.n) t.f32_copy.assign(t.f32, t.f32 + t.n);
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
  return t.dtype == LC0ROCM_DTYPE_I32 ? t.i32[0] : static_cast<int>(t.f32[0]);
}

namespace {

// out[i] = the half bits of in[i] for i < count (half_bits.h), in slices
// on several threads when there are many.
void to_half_bits(const float* in, size_t count, uint16_t* out) {
  constexpr size_t kSlice = size_t(1) << 18;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t parts = std::min<size_t>({cores, 16, (count + kSlice - 1) / kSlice});
  auto convert = [in, out](size_t from, size_t to) { half_bits(in + from, to - from, out + from); };
  if (parts <= 1) return convert(0, count);
  const size_t step = (count + parts - 1) / parts;
  std::vector<std::thread> threads;
  size_t covered = step;              // [0, step) is this thread's; threads take the slices after it
  try {
    for (; covered < count; covered += step) {
      threads.emplace_back(convert, covered, std::min(count, covered + step));
    }
  } catch (const std::system_error&) {
    // No thread to be had: this one converts what no thread took.
  }
  convert(0, std::min(count, step));
  if (covered < count) convert(covered, count);
  for (std::thread& t : threads) t.join();
}

}  // namespace

DeviceBuffer upload_floats(const float* values, size_t count, DType dtype) {
  DeviceBuffer buf(count * dtype_size(dtype));
  if (count == 0) return buf;
  if (dtype == DType::F32) {
    GPU_CHECK(hipMemcpy(buf.get(), values, buf.bytes(), hipMemcpyHostToDevice));
  } else {
    static_assert(sizeof(half) == sizeof(uint16_t), "half is 16 bits");
    std::unique_ptr<uint16_t[]> bits(new uint16_t[count]);   // every element written below
    to_half_bits(values, count, bits.get());
    GPU_CHECK(hipMemcpy(buf.get(), bits.get(), buf.bytes(), hipMemcpyHostToDevice));
  }
  return buf;
}

DeviceBuffer upload_floats(const std::vector<float>& values, DType dtype) {
  return upload_floats(values.data(), values.size(), dtype);
}

DeviceBuffer WeightStore::upload(const std::string& name, DType dtype, long long expected) const {
  const HostTensor& t = float_tensor(name, expected);   // from the caller's memory: no copy
  return upload_floats(t.f32, t.n, dtype);
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
