// weight_store.h - the named host tensors given to lc0rocm_create, and their
// upload to the device in the storage type of the network.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "dtype.h"
#include "staged_upload.h"

namespace lc0rocm {

// A caller's tensor, borrowed for the create call (lc0rocm.h: "read during
// lc0rocm_create only"): most go to the device straight from the caller's
// memory; a vector copy is made only for code that asks for one (floats()).
// A LINEAR16 tensor counts as a float one: decoded where it is copied.
struct HostTensor {
  const float* f32 = nullptr;      // LC0ROCM_DTYPE_F32 data
  const int32_t* i32 = nullptr;    // LC0ROCM_DTYPE_I32 data
  const uint16_t* linear16 = nullptr;   // LC0ROCM_DTYPE_LINEAR16 steps, decoded as uploaded
  float lo = 0.0f, span = 0.0f;         // their range (linear16.h)
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

  // A float tensor's values where the caller holds them (no copy).
  FloatSpan span(const std::string& name, long long expected = -1) const;

  // Uploads go through page-locked staging on the null stream (staged_upload.h):
  // kernels queued there see them; finish_uploads() before any other stream reads.
  // Float tensor on the device, converted to `dtype`.
  DeviceBuffer upload(const std::string& name, DType dtype, long long expected = -1) const;
  // Float tensor on the device as float32 regardless of the network's type.
  DeviceBuffer upload_f32(const std::string& name, long long expected = -1) const;
  DeviceBuffer upload_i32(const std::string& name, long long expected = -1) const;
  // Host values (tensors' spans joined, or values derived from tensors) as
  // one device tensor of `dtype`.
  DeviceBuffer upload_values(const std::vector<FloatSpan>& parts, DType dtype) const;
  DeviceBuffer upload_values(const std::vector<float>& values, DType dtype) const;
  void finish_uploads() const { staging_.finish(); }

 private:
  const HostTensor& find(const std::string& name) const;
  const HostTensor& float_tensor(const std::string& name, long long expected) const;
  std::map<std::string, HostTensor> tensors_;
  mutable StagedUpload staging_;   // made by the first upload (after the device is chosen)
};

}  // namespace lc0rocm
