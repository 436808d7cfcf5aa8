// weight_store.h - the named host tensors given to lc0rocm_create, and their
// upload to the device in the storage type of the network.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "dtype.h"

namespace lc0rocm {

// A caller's tensor, borrowed for the create call (lc0rocm.h: "read during
// lc0rocm_create only"): most go to the device straight from the caller's
// memory; a vector copy is made only for code that asks for one (floats()).
struct HostTensor {
  const float* f32 = nullptr;      // LC0ROCM_DTYPE_F32 data
  const int32_t* i32 = nullptr;    // LC0ROCM_DTYPE_I32 data
  size_t n = 0;
  int dtype = LC0ROCM_DTYPE_F32;
  mutable std::vector<float> f32_copy;     // made by the first floats()
  mutable std::vector<int32_t> i32_copy;   // made by the first ints()
  size_t count() const { return n; }
};

// Names are those native.py gives (see docs in lc0_rocm/backends/native.py):
// raw proto paths such as "encoder.3.mha.q_w", derived tensors such as
// "resnet.block.0.conv1.w", and maps such as "map.policy".
class WeightStore {
 public:
  WeightStore(const lc0rocm_tensor* tensors, int count);

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // Throws LC0ROCM_INVALID_ARGUMENT naming the tensor when it is missing, has
  // the wrong element type, or (expected >= 0) the wrong element count.
  const std::vector<float>& floats(const std::string& name, long long expected = -1) const;
  const std::vector<int32_t>& ints(const std::string& name, long long expected = -1) const;
  size_t count(const std::string& name) const;
  // A 1-element tensor read as an integer (e.g. "meta.headcount").
  int scalar(const std::string& name) const;

  // Float tensor on the device, converted to `dtype`.
  DeviceBuffer upload(const std::string& name, DType dtype, long long expected = -1) const;
  // Float tensor on the device as float32 regardless of the network's type.
  DeviceBuffer upload_f32(const std::string& name, long long expected = -1) const;
  DeviceBuffer upload_i32(const std::string& name, long long expected = -1) const;

 private:
  const HostTensor& find(const std::string& name) const;
  const HostTensor& float_tensor(const std::string& name, long long expected) const;
  std::map<std::string, HostTensor> tensors_;
};

// Host data -> new device buffer, converted to dtype (large float16
// conversions split over the host's cores: a big net has ~10^8 weights).
DeviceBuffer upload_floats(const float* values, size_t count, DType dtype);
DeviceBuffer upload_floats(const std::vector<float>& values, DType dtype);

}  // namespace lc0rocm
