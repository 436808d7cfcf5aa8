// staged_upload.h - a network's weights to the device through page-locked
// staging slots: each piece is converted (or copied) into a slot by the
// host's cores while the copy engine moves the slots before it, instead
// of a fresh pageable buffer per tensor that the driver copies once more
// into its own staging before the transfer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "device_buffer.h"
#include "dtype.h"

namespace lc0rocm {

// Host values borrowed for one upload call: float32 at `data`, or a net
// file's LINEAR16 steps at `linear16` (linear16.h: lo + step / 65535 * span).
struct FloatSpan {
  const float* data;
  size_t count;
  const uint16_t* linear16 = nullptr;
  float lo = 0.0f, span = 0.0f;
};

class StagedUpload {
 public:
  StagedUpload() = default;
  ~StagedUpload();                              // waits for its copies, then frees its slots
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  // The spans, one after the other, in a new device buffer of `dtype`. The
  // host values are read before this returns; the copy is queued on the
  // null stream (kernels there see it): call finish() before other streams
  // read the buffer.
  DeviceBuffer upload(const std::vector<FloatSpan>& parts, DType dtype);
  // Every queued copy has landed (throws on a failed copy).
  void finish();

 private:
  static constexpr size_t kSlotBytes = size_t(8) << 20;
  static constexpr int kSlots = 4;
  struct Slot {
    char* host = nullptr;
    hipEvent_t copied = nullptr;   // recorded after the slot's last queued copy
    bool recorded = false;         // `copied` recorded: wait for it before writing the slot again
    size_t used = 0;
  };
  // The slot to write `bytes` (at most kSlotBytes) into: the current one if
  // they fit, else the next, once the copies out of it have landed.
  Slot& slot_for(size_t bytes);
  void make_slots();

  std::vector<Slot> slots_;
  int current_ = 0;
};

}  // namespace lc0rocm
