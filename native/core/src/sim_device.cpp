// sim_device.cpp - a simulated GPU (include/lc0core_sim.h): lc0's random
// network's outputs, delivered after a pass time taken from a batch-size
// curve, passes one at a time in arrival order.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <vector>
#include "../include/lc0core_encode.h"
#include "../include/lc0core_sim.h"
#include "errors.h"

struct lc0core_sim_device {
  using Clock = std::chrono::steady_clock;
  lc0core_random_net net;
  double pass_us, position_us;
  std::mutex mutex;               // guards what follows
  Clock::time_point free_at;      // when the last queued pass ends
  Clock::time_point since;         // the log's zero
  std::vector<lc0core_sim_pass> log;
};

LC0CORE_EXPORT int lc0core_sim_create(int64_t seed, int32_t uniform, double pass_us, double position_us,
                                      lc0core_sim_device** device) {
  return lc0core::guarded([&] {
    lc0core::require(device, "device");
    if (!(pass_us >= 0 && position_us >= 0 && pass_us < 1e7 && position_us < 1e6)) {
      throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "pass_us and position_us must be in [0, 1e7) and [0, 1e6)");
    }
    auto* d = new lc0core_sim_device();
    d->net.seed = seed, d->net.uniform = uniform;
    d->pass_us = pass_us, d->position_us = position_us;
    d->free_at = d->since = lc0core_sim_device::Clock::now();
    *device = d;
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT void lc0core_sim_destroy(lc0core_sim_device* device) { delete device; }

LC0CORE_EXPORT int lc0core_sim_forward(void* ctx, int n, const uint64_t* masks, const float* values,
                                       float* policy, float* wdl, float* moves_left) {
  if (!ctx) return int(LC0CORE_INVALID_ARGUMENT);
  auto* d = static_cast<lc0core_sim_device*>(ctx);
  // The outputs first (the caller's thread, as a host would stage inputs).
  const int status = lc0core_random_forward(&d->net, n, masks, values, policy, wdl, moves_left);
  if (status != 0 || n == 0) return status;
  using Clock = lc0core_sim_device::Clock;
  const auto pass = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::micro>(d->pass_us + d->position_us * n));
  Clock::time_point done;
  {
    std::lock_guard<std::mutex> lock(d->mutex);
    const Clock::time_point start = std::max(Clock::now(), d->free_at);
    done = d->free_at = start + pass;
    const auto ms = [&](Clock::time_point t) { return float(std::chrono::duration<double, std::milli>(t - d->since).count()); };
    d->log.push_back(lc0core_sim_pass{ms(start), ms(done), n, 0});
  }
  std::this_thread::sleep_until(done);
  return 0;
}

LC0CORE_EXPORT int lc0core_sim_log_start(lc0core_sim_device* device) {
  return lc0core::guarded([&] {
    lc0core::require(device, "device");
    std::lock_guard<std::mutex> lock(device->mutex);
    device->log.clear();
    device->since = lc0core_sim_device::Clock::now();
    return int(LC0CORE_OK);
  });
}

LC0CORE_EXPORT int lc0core_sim_log_read(lc0core_sim_device* device, lc0core_sim_pass* out, int capacity, int* count) {
  return lc0core::guarded([&] {
    lc0core::require(device, "device");
    lc0core::require(count, "count");
    if (capacity > 0) lc0core::require(out, "out");
    std::lock_guard<std::mutex> lock(device->mutex);
    *count = int(device->log.size());
    std::copy_n(device->log.begin(), std::min(std::max(capacity, 0), *count), out);
    return int(LC0CORE_OK);
  });
}
