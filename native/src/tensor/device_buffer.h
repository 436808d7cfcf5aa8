// device_buffer.h - owning device allocations, and a per-stream scratch arena.
#pragma once
#include <cstddef>
#include <vector>

#include "errors.h"

namespace lc0rocm {

// One device allocation, freed on destruction. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) GPU_CHECK(hipMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() { if (ptr_) hipFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) { if (ptr_) hipFree(ptr_); ptr_ = o.ptr_; bytes_ = o.bytes_; o.ptr_ = nullptr; o.bytes_ = 0; }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Scratch memory of one stream, handed out in order during a forward pass
// and rewound by reset() before the next. It grows (new chunk) the first
// time a pass needs more, so no body has to predict its scratch size; once
// the largest batch has run, no further allocation happens. Not thread-safe:
// each stream has its own.
class Arena {
 public:
  static constexpr size_t kAlign = 256;
  static constexpr size_t kMinChunk = size_t(64) << 20;

  void reset() { chunk_ = 0; offset_ = 0; }

  void* take(size_t bytes) {
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    while (chunk_ < chunks_.size()) {
      if (offset_ + bytes <= chunks_[chunk_].bytes()) {
        void* p = static_cast<char*>(chunks_[chunk_].get()) + offset_;
        offset_ += bytes;
        return p;
      }
      ++chunk_;
      offset_ = 0;
    }
    chunks_.emplace_back(bytes > kMinChunk ? bytes : kMinChunk);
    chunk_ = chunks_.size() - 1;
    offset_ = bytes;
    return chunks_.back().get();
  }
  template <typename T> T* take(size_t count) { return static_cast<T*>(take(count * sizeof(T))); }

 private:
  std::vector<DeviceBuffer> chunks_;
  size_t chunk_ = 0;
  size_t offset_ = 0;
};

}  // namespace lc0rocm
