// api.cpp - the C ABI: every entry point catches everything and returns a
// status code; the message goes to a thread-local last error.
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "../include/lc0rocm.h"
#include "network.h"
#include "pass_log.h"
#include "pinned_host.h"

namespace {

thread_local std::string last_error;

template <typename F>
int guarded(F&& body) {
  try {
    body();
    last_error.clear();
    return LC0ROCM_OK;
  } catch (const lc0rocm::Error& e) {
    last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    last_error = "out of host memory";
    return LC0ROCM_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = std::string("internal error: ") + e.what();
    return LC0ROCM_INTERNAL_ERROR;
  } catch (...) {
    last_error = "internal error (unknown exception)";
    return LC0ROCM_INTERNAL_ERROR;
  }
}

void require(bool ok, const char* what) {
  if (!ok) lc0rocm::fail(LC0ROCM_INVALID_ARGUMENT, what);
}

}  // namespace

struct lc0rocm_net {
  lc0rocm::Network network;
  lc0rocm::PassLog pass_log;
  std::atomic<int> streams{0};
  lc0rocm_net(const lc0rocm_config& c, const lc0rocm::WeightStore& w) : network(c, w) {}
};

struct lc0rocm_stream {
  lc0rocm::Stream stream;
  explicit lc0rocm_stream(lc0rocm_net& n) : stream(n.network) {
    stream.set_pass_log(&n.pass_log, n.streams++);
  }
};

extern "C" {

int lc0rocm_abi_version(void) { return LC0ROCM_ABI_VERSION; }

const char* lc0rocm_build_info(void) {
  return "lc0-rocm native, vendor " GPU_VENDOR_NAME ", built " __DATE__;
}

const char* lc0rocm_last_error(void) { return last_error.c_str(); }

int lc0rocm_get_device_count(int* count) {
  return guarded([&] {
    require(count != nullptr, "count is NULL");
    *count = 0;
    hipError_t err = hipGetDeviceCount(count);
    if (err != hipSuccess) {
      *count = 0;
      GPU_CHECK(err);
    }
  });
}

int lc0rocm_get_device_info(int device, lc0rocm_device_info* info) {
  return guarded([&] {
    require(info != nullptr, "info is NULL");
    lc0rocm::fill_device_info(device, info);
  });
}

int lc0rocm_create(const lc0rocm_config* config, const lc0rocm_tensor* tensors, int n_tensors,
                   lc0rocm_net** net) {
  return guarded([&] {
    require(config != nullptr && net != nullptr, "config and net must not be NULL");
    *net = nullptr;
    lc0rocm::WeightStore weights(tensors, n_tensors);
    std::unique_ptr<lc0rocm_net> made(new lc0rocm_net(*config, weights));
    weights.finish_uploads();   // the weights' copies are asynchronous: landed before any stream runs
    *net = made.release();
  });
}

void lc0rocm_destroy(lc0rocm_net* net) {
  guarded([&] { delete net; });
}

int lc0rocm_stream_create(lc0rocm_net* net, lc0rocm_stream** stream) {
  return guarded([&] {
    require(net != nullptr && stream != nullptr, "net and stream must not be NULL");
    *stream = nullptr;
    *stream = new lc0rocm_stream(*net);
  });
}

void lc0rocm_stream_destroy(lc0rocm_stream* stream) {
  guarded([&] { delete stream; });
}

int lc0rocm_forward(lc0rocm_stream* stream, int n, const uint64_t* masks, const float* values,
                    float* policy, float* wdl, float* moves_left) {
  return guarded([&] {
    require(stream != nullptr, "stream is NULL");
    require(n == 0 || (masks && values), "masks and values must not be NULL");
    stream->stream.forward(n, masks, values, nullptr, policy, wdl, moves_left);
  });
}

int lc0rocm_forward_planes(lc0rocm_stream* stream, int n, const float* planes, float* policy,
                           float* wdl, float* moves_left) {
  return guarded([&] {
    require(stream != nullptr, "stream is NULL");
    require(n == 0 || planes, "planes must not be NULL");
    stream->stream.forward(n, nullptr, nullptr, planes, policy, wdl, moves_left);
  });
}

int lc0rocm_stream_describe(lc0rocm_stream* stream, int n, char* text, size_t size) {
  return guarded([&] {
    require(stream != nullptr && text != nullptr && size > 0, "stream and text must not be NULL, size positive");
    const std::string d = stream->stream.describe(n);
    const size_t len = d.size() < size - 1 ? d.size() : size - 1;
    std::memcpy(text, d.data(), len);
    text[len] = 0;
  });
}

int lc0rocm_pass_log_start(lc0rocm_net* net) {
  return guarded([&] {
    require(net != nullptr, "net is NULL");
    net->pass_log.start(net->network.config().device.device);
  });
}

int lc0rocm_pass_log_stop(lc0rocm_net* net) {
  return guarded([&] {
    require(net != nullptr, "net is NULL");
    net->pass_log.stop();
  });
}

int lc0rocm_pass_log_read(lc0rocm_net* net, lc0rocm_pass* out, int capacity, int* count) {
  return guarded([&] {
    require(net != nullptr && count != nullptr, "net and count must not be NULL");
    require(capacity == 0 || out != nullptr, "out is NULL");
    *count = net->pass_log.read(out, capacity);
  });
}

int lc0rocm_host_alloc(size_t bytes, void** block) {
  return guarded([&] {
    require(block != nullptr, "block is NULL");
    require(bytes > 0, "bytes must be positive");
    *block = lc0rocm::pinned_alloc(bytes);
  });
}

int lc0rocm_host_free(void* block) {
  return guarded([&] {
    require(block != nullptr, "block is NULL");
    require(lc0rocm::pinned_free(block), "not a block from lc0rocm_host_alloc (or freed already)");
  });
}

}  // extern "C"
