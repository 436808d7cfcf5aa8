// network.cpp - builds a Body from the config and runs forward passes.
#include "network.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/ops.h"
#include "pinned_host.h"

namespace lc0rocm {

// ---------------------------------------------------------------- registries
namespace {
template <typename F>
struct Registry {
  std::mutex mutex;
  std::map<std::string, F> entries;
};
template <typename F>
Registry<F>& registry() {
  static Registry<F> r;
  return r;
}
}  // namespace

void register_body(const std::string& kind, BodyFactory factory) {
  auto& r = registry<BodyFactory>();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries[kind] = factory;
}

void register_policy_head(const std::string& kind, PolicyHeadFactory factory) {
  auto& r = registry<PolicyHeadFactory>();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries[kind] = factory;
}

BodyFactory find_body(const std::string& kind) {
  auto& r = registry<BodyFactory>();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(kind);
  if (it == r.entries.end()) fail(LC0ROCM_UNSUPPORTED, "this build has no " + kind + " body");
  return it->second;
}

PolicyHeadFactory find_policy_head(const std::string& kind) {
  auto& r = registry<PolicyHeadFactory>();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.entries.find(kind);
  if (it == r.entries.end()) fail(LC0ROCM_UNSUPPORTED, "this build has no " + kind + " policy head");
  return it->second;
}

// ---------------------------------------------------------------- device
namespace {
DeviceInfo device_of(int device, const hipDeviceProp_t& prop) {
  char arch[64];
  gpu_arch_name(prop, arch, sizeof(arch));
  DeviceInfo info = device_from_arch(arch, prop.warpSize, prop.multiProcessorCount, gpu_shared_per_block(prop),
                                     kGpuSm90aBuild);
  info.device = device;
  return info;
}
}  // namespace

DeviceInfo query_device(int device) {
  hipDeviceProp_t prop;
  GPU_CHECK(hipGetDeviceProperties(&prop, device));
  return device_of(device, prop);
}

void fill_device_info(int device, lc0rocm_device_info* info) {
  int count = 0;
  GPU_CHECK(hipGetDeviceCount(&count));
  if (device < 0 || device >= count)
    fail(LC0ROCM_INVALID_ARGUMENT, "device " + std::to_string(device) + " does not exist (" +
                                       std::to_string(count) + " present)");
  hipDeviceProp_t prop;
  GPU_CHECK(hipGetDeviceProperties(&prop, device));
  std::memset(info, 0, sizeof(*info));
  std::snprintf(info->name, sizeof(info->name), "%s", prop.name);
  gpu_arch_name(prop, info->arch, sizeof(info->arch));
  info->vendor = gpu_vendor_id();
  info->warp_size = prop.warpSize;
  info->multiprocessors = prop.multiProcessorCount;
  info->fast_fp16 = device_of(device, prop).fast_fp16 ? 1 : 0;
  info->total_memory = static_cast<int64_t>(prop.totalGlobalMem);
}

// ---------------------------------------------------------------- network
namespace {
Activation resolve_activation(int value, const char* what) {
  if (!is_known_activation(value))
    fail(LC0ROCM_UNSUPPORTED, std::string(what) + ": unsupported activation " + std::to_string(value));
  return static_cast<Activation>(value);
}

bool is_attention_body(int network) { return network == 6 || network == 7; }
bool is_convolution_body(int network) { return network >= 1 && network <= 4; }

// The settings (the backends' options) of c; a setting out of its range is
// an invalid argument naming it (native.py checks them first).
Settings settings_of(const lc0rocm_config& c) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) fail(LC0ROCM_INVALID_ARGUMENT, what);
  };
  auto flag = [&](int v, const char* name) {
    require(v == 0 || v == 1, std::string(name) + " must be 0 or 1, got " + std::to_string(v));
    return v == 1;
  };
  Settings s;
  s.graphs = flag(c.graphs, "graphs");
  s.gemm_tune = flag(c.gemm_tune, "gemm_tune");
  s.half_sums = flag(c.half_sums, "half_sums");
  s.side_stream = flag(c.side_stream, "side_stream");
  require(c.dependent_launch >= -1 && c.dependent_launch <= 1,
          "dependent_launch must be -1, 0 or 1, got " + std::to_string(c.dependent_launch));
  s.dependent_launch = c.dependent_launch;
  require(c.mapped_io >= 0 && c.mapped_io <= 65536, "mapped_io must be in 0..65536, got " + std::to_string(c.mapped_io));
  s.mapped_io = c.mapped_io;
  constexpr unsigned kAllPaths = (LC0ROCM_PATH_TF32_SPLIT << 1) - 1;
  require((c.disabled & ~kAllPaths) == 0, "disabled names unknown paths");
  require((c.forced & ~static_cast<unsigned>(LC0ROCM_FORCEABLE_PATHS)) == 0, "forced names paths that cannot be forced");
  require((c.disabled & c.forced) == 0, "a path is both disabled and forced");
  s.disabled = c.disabled;
  s.forced = c.forced;
  return s;
}
}  // namespace

Network::Network(const lc0rocm_config& c, const WeightStore& weights) {
  if (c.max_batch < 1 || c.max_batch > 65536)
    fail(LC0ROCM_INVALID_ARGUMENT, "max_batch must be in 1..65536, got " + std::to_string(c.max_batch));
  if (c.precision != LC0ROCM_PRECISION_FP32 && c.precision != LC0ROCM_PRECISION_FP16)
    fail(LC0ROCM_INVALID_ARGUMENT, "unknown precision " + std::to_string(c.precision));
  int count = 0;
  GPU_CHECK(hipGetDeviceCount(&count));
  if (c.device < 0 || c.device >= count)
    fail(LC0ROCM_INVALID_ARGUMENT, "device " + std::to_string(c.device) + " does not exist (" +
                                       std::to_string(count) + " present)");
  GPU_CHECK(hipSetDevice(c.device));
  config_.network = c.network;
  config_.policy = c.policy;
  config_.value = c.value;
  config_.moves_left = c.moves_left;
  config_.input_embedding = c.input_embedding;
  config_.default_act = resolve_activation(c.default_activation, "default activation");
  config_.ffn_act = resolve_activation(c.ffn_activation, "ffn activation");
  config_.smolgen_act = resolve_activation(c.smolgen_activation, "smolgen activation");
  config_.dtype = c.precision == LC0ROCM_PRECISION_FP16 ? DType::F16 : DType::F32;
  config_.max_batch = c.max_batch;
  config_.device = query_device(c.device);
  config_.settings = settings_of(c);
  if (c.value != 1 && c.value != 2)
    fail(LC0ROCM_UNSUPPORTED, "unsupported value format " + std::to_string(c.value));

  std::string kind;
  if (is_attention_body(c.network)) kind = "attention";
  else if (is_convolution_body(c.network)) kind = "resnet";
  else fail(LC0ROCM_UNSUPPORTED, "unsupported network structure " + std::to_string(c.network));
  body_ = find_body(kind)(config_, weights);
}

// ---------------------------------------------------------------- stream
namespace {
constexpr size_t kOutFloats = kPolicyOutputs + 3 + 1;  // per position
constexpr size_t kPackedBytes = kInputPlanes * (sizeof(uint64_t) + sizeof(float));  // masks + values
constexpr size_t kPlanesBytes = kInputPlanes * kSquares * sizeof(float);
// The device's input buffer takes either kind.
constexpr size_t kInputBytes = kPackedBytes > kPlanesBytes ? kPackedBytes : kPlanesBytes;
}  // namespace

Stream::Stream(const Network& net) : net_(net), max_batch_(net.config().max_batch) {
  const Settings& settings = net.config().settings;
  graphs_enabled_ = settings.graphs;
  GPU_CHECK(hipSetDevice(net.config().device.device));
  GPU_CHECK(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking));
  side_enabled_ = net.body().uses_side_lane() && settings.side_stream;
  device_dependent_launch_ = net.config().device.dependent_launch;
  forced_dependent_launch_ = settings.dependent_launch;
  try {
    blas_ = std::make_unique<Blas>(stream_, settings.gemm_tune, net.gemm_choices());
    if (side_enabled_) {
      GPU_CHECK(hipStreamCreateWithFlags(&side_.stream, hipStreamNonBlocking));
      side_blas_ = std::make_unique<Blas>(side_.stream, settings.gemm_tune, net.gemm_choices());
      side_.blas = side_blas_.get();
      GPU_CHECK(hipEventCreateWithFlags(&side_.forked, hipEventDisableTiming));
      GPU_CHECK(hipEventCreateWithFlags(&side_.done, hipEventDisableTiming));
    }
    size_t out_bytes = kOutFloats * sizeof(float) * max_batch_;
    GPU_CHECK(hipHostMalloc(&host_in_, kPackedBytes * max_batch_, hipHostMallocDefault));
    GPU_CHECK(hipHostMalloc(reinterpret_cast<void**>(&host_out_), out_bytes, hipHostMallocDefault));
    dev_in_ = DeviceBuffer(kInputBytes * max_batch_);
    dev_out_ = DeviceBuffer(out_bytes);
    mapped_max_batch_ = settings.mapped_io;
    if (mapped_max_batch_ > 0 && (hipHostGetDevicePointer(&host_in_device_, host_in_, 0) != hipSuccess ||
                                  hipHostGetDevicePointer(reinterpret_cast<void**>(&host_out_device_),
                                                          host_out_, 0) != hipSuccess)) {
      (void)hipGetLastError();
      mapped_max_batch_ = 0;  // no device view of pinned memory here: copies as usual
    }
  } catch (...) {
    if (host_in_) hipHostFree(host_in_);
    if (host_out_) hipHostFree(host_out_);
    destroy_side_lane();
    blas_.reset();
    hipStreamDestroy(stream_);
    throw;
  }
}

void Stream::destroy_side_lane() {
  if (side_.stream) hipStreamSynchronize(side_.stream);
  side_blas_.reset();
  if (side_.forked) hipEventDestroy(side_.forked);
  if (side_.done) hipEventDestroy(side_.done);
  if (side_.stream) hipStreamDestroy(side_.stream);
  side_ = SideLane{};
}

Stream::~Stream() {
  if (stream_) hipStreamSynchronize(stream_);
  for (auto& kv : graphs_) hipGraphExecDestroy(kv.second);
  destroy_side_lane();
  blas_.reset();
  if (host_in_) hipHostFree(host_in_);
  if (host_planes_) hipHostFree(host_planes_);
  if (host_out_) hipHostFree(host_out_);
  if (stream_) hipStreamDestroy(stream_);
}

char* Stream::planes_staging() {
  if (!host_planes_) {
    void* buffer = nullptr;
    GPU_CHECK(hipHostMalloc(&buffer, kPlanesBytes * max_batch_, hipHostMallocDefault));
    if (mapped_max_batch_ > 0 && hipHostGetDevicePointer(&host_planes_device_, buffer, 0) != hipSuccess) {
      hipHostFree(buffer);
      fail(LC0ROCM_DEVICE_ERROR, "no device view of the pinned planes buffer, though the packed one has one");
    }
    host_planes_ = buffer;
  }
  return static_cast<char*>(host_planes_);
}

void Stream::forward(int n, const uint64_t* masks, const float* values, const float* planes,
                     float* policy, float* wdl, float* moves_left) {
  if (n < 0) fail(LC0ROCM_INVALID_ARGUMENT, "negative batch size");
  if (n > 0 && (!policy || !wdl)) fail(LC0ROCM_INVALID_ARGUMENT, "policy and wdl outputs are required");
  if (n > 0 && !planes && (!masks || !values)) fail(LC0ROCM_INVALID_ARGUMENT, "no input given");
  GPU_CHECK(hipSetDevice(net_.config().device.device));
  for (int done = 0; done < n; done += max_batch_) {
    int m = n - done < max_batch_ ? n - done : max_batch_;
    size_t p = static_cast<size_t>(done);
    forward_chunk(m, masks ? masks + p * kInputPlanes : nullptr,
                  values ? values + p * kInputPlanes : nullptr,
                  planes ? planes + p * kInputPlanes * kSquares : nullptr,
                  policy + p * kPolicyOutputs, wdl + p * 3, moves_left ? moves_left + p : nullptr);
  }
}

std::string Stream::describe(int n) const {
  const int pass = n < 1 ? 1 : n > max_batch_ ? max_batch_ : n;
  const int g = padded_size(pass);
  return net_.body().describe(g) + " (batch " + std::to_string(g) + ")" +
         (g <= mapped_max_batch_ ? "; input and outputs in mapped host memory" : "");
}

int Stream::padded_size(int n) const {
  if (!graphs_enabled_ || n <= 8) return n;
  // A graph per exact size would mean a capture for nearly every batch of a
  // search (sizes vary with collisions); the padding rows are zeros, cost
  // little, and their outputs are dropped.
  const int step = n <= 64 ? 8 : n <= 256 ? 16 : 32;
  const int padded = (n + step - 1) / step * step;
  return padded < max_batch_ ? padded : max_batch_;
}

namespace {
// A block in pinned caller memory moves by its own DMA only from this size
// on: below it, staging costs less than the DMA it adds (H100, maia: every
// block direct lost 3-6 % at batches 1 and 16, won 47 % at 256).
constexpr size_t kDirectMinBytes = 64 * 1024;

bool goes_direct(const void* p, size_t bytes) { return bytes >= kDirectMinBytes && is_pinned(p, bytes); }

// The byte range [begin, end) that staged blocks span, for one copy of it.
struct Span {
  size_t begin = SIZE_MAX, end = 0;
  void add(size_t from, size_t to) {
    if (from < begin) begin = from;
    if (to > end) end = to;
  }
  bool empty() const { return end <= begin; }
};
}  // namespace

void Stream::forward_chunk(int n, const uint64_t* masks, const float* values, const float* planes,
                           float* policy, float* wdl, float* moves_left) {
  const int g = padded_size(n);
  const size_t rows = static_cast<size_t>(n), pad = static_cast<size_t>(g - n);
  pass_timer_.begin(pass_log_, stream_);
  // Inputs: the device buffer holds each input block for g rows (padding
  // rows zero). A large block in lc0rocm_host_alloc memory goes straight to
  // the device; the others are staged in host_in_ at the same offsets and
  // sent in one copy.
  struct In {
    const void* src;
    size_t offset, row;   // bytes: in the device buffer, per position
  };
  const size_t mask_row = kInputPlanes * sizeof(uint64_t);
  const In planes_in[1] = {{planes, 0, kPlanesBytes}};
  const In packed_in[2] = {{masks, 0, mask_row},
                           {values, static_cast<size_t>(g) * mask_row, kInputPlanes * sizeof(float)}};
  const In* in = planes ? planes_in : packed_in;
  const int in_count = planes ? 1 : 2;
  const bool mapped = g <= mapped_max_batch_;
  char* host = planes ? planes_staging() : static_cast<char*>(host_in_);
  char* dev = dev_in_.as<char>();
  Span staged_in;
  for (int i = 0; i < in_count; ++i) {
    const In& b = in[i];
    if (!mapped && goes_direct(b.src, rows * b.row)) {
      GPU_CHECK(hipMemcpyAsync(dev + b.offset, b.src, rows * b.row, hipMemcpyHostToDevice, stream_));
      if (pad) GPU_CHECK(hipMemsetAsync(dev + b.offset + rows * b.row, 0, pad * b.row, stream_));
    } else {
      std::memcpy(host + b.offset, b.src, rows * b.row);
      std::memset(host + b.offset + rows * b.row, 0, pad * b.row);
      staged_in.add(b.offset, b.offset + static_cast<size_t>(g) * b.row);
    }
  }
  if (!staged_in.empty() && !mapped) {
    GPU_CHECK(hipMemcpyAsync(dev + staged_in.begin, host + staged_in.begin, staged_in.end - staged_in.begin,
                             hipMemcpyHostToDevice, stream_));
  }

  const void* pass_in = !mapped ? dev_in_.get() : planes ? host_planes_device_ : host_in_device_;
  float* pass_out = mapped ? host_out_device_ : dev_out_.as<float>();
  if (graphs_enabled_) run_device_graphed(g, planes != nullptr, pass_in, pass_out);
  else run_device(g, planes != nullptr, pass_in, pass_out);

  // Outputs (policy, wdl, moves left: blocks of g rows in dev_out_): a large
  // pinned caller block gets its n rows by DMA; the others come through
  // host_out_ in one copy, and are copied out after the sync.
  struct Out {
    float* dst;
    size_t offset, row;   // floats
  };
  // Without a moves-left head nothing writes that output on the device: the
  // caller's block is zeroed here instead of copied.
  const bool has_moves_left = net_.config().moves_left;
  const Out out[3] = {{policy, 0, kPolicyOutputs},
                      {wdl, static_cast<size_t>(g) * kPolicyOutputs, 3},
                      {has_moves_left ? moves_left : nullptr, static_cast<size_t>(g) * (kPolicyOutputs + 3), 1}};
  bool staged[3] = {false, false, false};
  Span staged_out;
  const float* dev_out = dev_out_.as<float>();
  for (int i = 0; i < 3; ++i) {
    const Out& b = out[i];
    if (!b.dst) continue;
    const size_t bytes = rows * b.row * sizeof(float);
    if (!mapped && goes_direct(b.dst, bytes)) {
      GPU_CHECK(hipMemcpyAsync(b.dst, dev_out + b.offset, bytes, hipMemcpyDeviceToHost, stream_));
    } else {
      staged[i] = true;
      staged_out.add(b.offset, b.offset + static_cast<size_t>(g) * b.row);
    }
  }
  if (!staged_out.empty() && !mapped) {
    GPU_CHECK(hipMemcpyAsync(host_out_ + staged_out.begin, dev_out + staged_out.begin,
                             (staged_out.end - staged_out.begin) * sizeof(float), hipMemcpyDeviceToHost, stream_));
  }
  pass_timer_.end(stream_);
  GPU_CHECK(hipStreamSynchronize(stream_));
  pass_timer_.finish(n, stream_id_);
  for (int i = 0; i < 3; ++i) {
    if (staged[i]) std::memcpy(out[i].dst, host_out_ + out[i].offset, rows * out[i].row * sizeof(float));
  }
  if (!has_moves_left && moves_left) std::memset(moves_left, 0, rows * sizeof(float));
}

bool Stream::dependent_launch(int n) const {
  if (!device_dependent_launch_) return false;
  return forced_dependent_launch_ >= 0 ? forced_dependent_launch_ == 1 : net_.body().uses_dependent_launch(n);
}

void Stream::run_device(int n, bool from_planes, const void* in, float* out) {
  const NetConfig& cfg = net_.config();
  DependentLaunchScope dependent(dependent_launch(n));
  arena_.reset();
  void* input = arena_.take(static_cast<size_t>(n) * kSquares * kInputPlanes * dtype_size(cfg.dtype));
  if (from_planes) {
    transpose_planes(stream_, cfg.dtype, n, static_cast<const float*>(in), input);
  } else {
    size_t mask_bytes = static_cast<size_t>(n) * kInputPlanes * sizeof(uint64_t);
    expand_planes(stream_, cfg.dtype, n, static_cast<const uint64_t*>(in),
                  reinterpret_cast<const float*>(static_cast<const char*>(in) + mask_bytes), input);
  }
  float* d_policy = out;
  float* d_wdl = d_policy + static_cast<size_t>(n) * kPolicyOutputs;
  float* d_mlh = d_wdl + static_cast<size_t>(n) * 3;
  side_.open = false;  // a pass that failed midway may have left it open
  ForwardContext ctx{stream_, *blas_, arena_, cfg.dtype, cfg.device, side_enabled_ ? &side_ : nullptr};
  net_.body().forward(ctx, n, input, NetOutputs{d_policy, d_wdl, d_mlh});
  join_side(ctx);  // a body that forked and did not join: the outputs must wait for it
}

void Stream::run_device_graphed(int n, bool from_planes, const void* in, float* out) {
  const int key = 2 * n + (from_planes ? 1 : 0);
  auto found = graphs_.find(key);
  if (found != graphs_.end()) {
    GPU_CHECK(hipGraphLaunch(found->second, stream_));
    return;
  }
  if (passes_[key]++ == 0) {  // first pass: plain, so the arena reaches its size
    run_device(n, from_planes, in, out);
    return;
  }
  // Second pass: capture (thread-local mode: other streams' threads are free
  // to allocate meanwhile), instantiate, launch. Any failure turns graphs off
  // for this stream and runs the pass plainly.
  hipGraph_t graph = nullptr;
  GPU_CHECK(hipStreamBeginCapture(stream_, hipStreamCaptureModeThreadLocal));
  bool captured = true;
  try {
    run_device(n, from_planes, in, out);
  } catch (const Error&) {
    captured = false;
  }
  hipError_t end = hipStreamEndCapture(stream_, &graph);
  hipGraphExec_t exec = nullptr;
  if (captured && end == hipSuccess && graph != nullptr &&
      hipGraphInstantiateWithFlags(&exec, graph, 0) == hipSuccess) {
    hipGraphDestroy(graph);
    graphs_[key] = exec;
    GPU_CHECK(hipGraphLaunch(exec, stream_));
    return;
  }
  if (graph) hipGraphDestroy(graph);
  (void)hipGetLastError();  // clear the capture error
  graphs_enabled_ = false;
  run_device(n, from_planes, in, out);
}

}  // namespace lc0rocm
