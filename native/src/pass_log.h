// pass_log.h - when each forward pass ran on the device, for measuring how
// busy a search keeps the GPU: every stream of a net records an event
// before its pass's first device operation and one after its last output
// copy; both are read against one base event, so passes of different
// streams share a timeline (milliseconds since the log started).
#pragma once
#include <mutex>
#include <vector>
#include "gpu_compat.h"
#include "../include/lc0rocm.h"

namespace lc0rocm {

class PassLog {
 public:
  PassLog() = default;
  ~PassLog();
  PassLog(const PassLog&) = delete;
  PassLog& operator=(const PassLog&) = delete;

  // Starts (or restarts) logging on `device`, dropping earlier passes.
  void start(int device);
  void stop();
  bool on() const { return on_; }
  // Adds a pass whose events have completed (its stream was synchronized).
  void add(hipEvent_t begin, hipEvent_t end, int positions, int stream_id);
  // Up to `capacity` passes, oldest first; returns how many there are.
  int read(lc0rocm_pass* out, int capacity);

 private:
  std::mutex mutex_;
  bool on_ = false;
  hipEvent_t base_ = nullptr;
  std::vector<lc0rocm_pass> passes_;
};

// A stream's two timing events, recorded around each pass while its net's
// log is on.
class PassTimer {
 public:
  PassTimer() = default;
  ~PassTimer();
  PassTimer(const PassTimer&) = delete;
  PassTimer& operator=(const PassTimer&) = delete;
  void begin(PassLog* log, hipStream_t stream);   // no-op while the log is off
  void end(hipStream_t stream);                    // before the stream's sync
  void finish(int positions, int stream_id);      // after it

 private:
  PassLog* log_ = nullptr;                         // set between begin and finish
  hipEvent_t begin_ = nullptr, end_ = nullptr;
};

}  // namespace lc0rocm
