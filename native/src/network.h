// network.h - a network on one device (weights, read-only) and the per-thread
// streams that run it (stream, BLAS handle, scratch, pinned staging).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "body.h"
#include "pass_log.h"

namespace lc0rocm {

DeviceInfo query_device(int device);
void fill_device_info(int device, lc0rocm_device_info* info);

class Network {
 public:
  Network(const lc0rocm_config& config, const WeightStore& weights);
  const NetConfig& config() const { return config_; }
  const Body& body() const { return *body_; }
  // The half products' timed algorithms, shared by this network's streams.
  const std::shared_ptr<GemmChoices>& gemm_choices() const { return gemm_choices_; }

 private:
  NetConfig config_;
  std::unique_ptr<Body> body_;
  std::shared_ptr<GemmChoices> gemm_choices_ = std::make_shared<GemmChoices>();
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
  // How a forward of n positions runs: the body's paths at the batch size
  // the pass takes (n padded for graphs, at most max_batch).
  std::string describe(int n) const;
  // Passes are timed into `log` while it is on, as stream number `id`.
  void set_pass_log(PassLog* log, int id) { pass_log_ = log, stream_id_ = id; }

 private:
  void forward_chunk(int n, const uint64_t* masks, const float* values, const float* planes,
                     float* policy, float* wdl, float* moves_left);
  // Input expansion + body on the device, from `in` (dev_in_'s layout) to
  // `out` (dev_out_'s): dev_in_ and dev_out_, or the host staging buffers'
  // device views for batches that read and write them in place.
  void run_device(int n, bool from_planes, const void* in, float* out);
  // The batch size a call of n positions runs at: with graphs, n rounded up
  // to a few buckets so that a search's varying batches share graphs.
  int padded_size(int n) const;
  // Same, through a graph captured on the second pass of each (n, input kind).
  void run_device_graphed(int n, bool from_planes, const void* in, float* out);
  void destroy_side_lane();
  bool dependent_launch(int n) const;  // whether a pass of n launches its kernels as dependent launches

  const Network& net_;
  hipStream_t stream_ = nullptr;
  PassLog* pass_log_ = nullptr;
  PassTimer pass_timer_;
  int stream_id_ = 0;
  std::unique_ptr<Blas> blas_;
  // The side lane (body.h): its stream, BLAS handle and fork/join events,
  // for bodies that use one. Off (every branch on stream_) with the
  // side_stream setting off.
  SideLane side_;
  std::unique_ptr<Blas> side_blas_;
  bool side_enabled_ = true;
  // Kernels as dependent launches (gpu_compat.h) where the device has them:
  // the dependent_launch setting forces them on / off (1 / 0 here), else -1
  // and the body's plan decides per batch size.
  bool device_dependent_launch_ = false;
  int forced_dependent_launch_ = -1;
  Arena arena_;
  int max_batch_;
  // The pinned host staging of full input planes, made by the first pass
  // that is given planes (searches send packed input only: 1/21 the bytes).
  char* planes_staging();
  // pinned host staging: packed input, then outputs (policy, wdl,
  // moves_left); full planes in host_planes_
  void* host_in_ = nullptr;
  void* host_planes_ = nullptr;
  float* host_out_ = nullptr;
  DeviceBuffer dev_in_, dev_out_;
  // Batches up to mapped_max_batch_ (the mapped_io setting) have the kernels
  // read their input from host_in_ (host_planes_) and write their outputs
  // into host_out_ through these device views of them, with no copies on
  // the stream.
  int mapped_max_batch_ = 0;
  void* host_in_device_ = nullptr;
  void* host_planes_device_ = nullptr;
  float* host_out_device_ = nullptr;
  // Graphs: the first pass of a shape runs plainly (growing the arena), the
  // second captures it, later ones replay it. Off with the graphs setting
  // off, and for good after any capture failure.
  bool graphs_enabled_ = true;
  std::map<int, int> passes_;                  // key -> plain passes so far
  std::map<int, hipGraphExec_t> graphs_;       // key -> instantiated graph
};


}  // namespace lc0rocm
