// network.h - a network on one device (weights, read-only) and the per-thread
// streams that run it (stream, BLAS handle, scratch, pinned staging).
#pragma once
#include <memory>

#include "body.h"

namespace lc0rocm {

DeviceInfo query_device(int device);
void fill_device_info(int device, lc0rocm_device_info* info);

class Network {
 public:
  Network(const lc0rocm_config& config, const WeightStore& weights);
  const NetConfig& config() const { return config_; }
  const Body& body() const { return *body_; }

 private:
  NetConfig config_;
  std::unique_ptr<Body> body_;
};

class Stream {
 public:
  explicit Stream(const Network& net);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Exactly one of (masks, values) or planes is given. moves_left may be null.
  void forward(int n, const uint64_t* masks, const float* values, const float* planes,
               float* policy, float* wdl, float* moves_left);

 private:
  void forward_chunk(int n, const uint64_t* masks, const float* values, const float* planes,
                     float* policy, float* wdl, float* moves_left);

  const Network& net_;
  hipStream_t stream_ = nullptr;
  std::unique_ptr<Blas> blas_;
  Arena arena_;
  int max_batch_;
  // pinned host staging: input, then outputs (policy, wdl, moves_left)
  void* host_in_ = nullptr;
  float* host_out_ = nullptr;
  DeviceBuffer dev_in_, dev_out_;
};

}  // namespace lc0rocm
