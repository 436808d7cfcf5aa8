// pass_log.cpp - see pass_log.h.
#include "pass_log.h"

#include <algorithm>
#include "tensor/errors.h"

namespace lc0rocm {

PassLog::~PassLog() {
  if (base_) hipEventDestroy(base_);
}

void PassLog::start(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  GPU_CHECK(hipSetDevice(device));
  if (!base_) GPU_CHECK(hipEventCreate(&base_));
  GPU_CHECK(hipEventRecord(base_, nullptr));
  GPU_CHECK(hipEventSynchronize(base_));
  passes_.clear();
  on_ = true;
}

void PassLog::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  on_ = false;
}

void PassLog::add(hipEvent_t begin, hipEvent_t end, int positions, int stream_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!on_) return;
  float begin_ms = 0.0f, end_ms = 0.0f;
  GPU_CHECK(hipEventElapsedTime(&begin_ms, base_, begin));
  GPU_CHECK(hipEventElapsedTime(&end_ms, base_, end));
  passes_.push_back(lc0rocm_pass{begin_ms, end_ms, positions, stream_id});
}

int PassLog::read(lc0rocm_pass* out, int capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int count = static_cast<int>(passes_.size());
  std::copy_n(passes_.begin(), std::min(std::max(capacity, 0), count), out);
  return count;
}

PassTimer::~PassTimer() {
  if (begin_) hipEventDestroy(begin_);
  if (end_) hipEventDestroy(end_);
}

void PassTimer::begin(PassLog* log, hipStream_t stream) {
  log_ = log && log->on() ? log : nullptr;
  if (!log_) return;
  if (!begin_) GPU_CHECK(hipEventCreate(&begin_));
  if (!end_) GPU_CHECK(hipEventCreate(&end_));
  GPU_CHECK(hipEventRecord(begin_, stream));
}

void PassTimer::end(hipStream_t stream) {
  if (log_) GPU_CHECK(hipEventRecord(end_, stream));
}

void PassTimer::finish(int positions, int stream_id) {
  if (log_) log_->add(begin_, end_, positions, stream_id);
  log_ = nullptr;
}

}  // namespace lc0rocm
