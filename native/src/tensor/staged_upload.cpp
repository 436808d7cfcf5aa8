#include "staged_upload.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>

#include "half_bits.h"

namespace lc0rocm {
namespace {

// float32 -> IEEE half bits (half_bits.h), in slices on several threads when there are many.
void to_half_bits(const float* in, size_t count, uint16_t* out) {
  constexpr size_t kSlice = size_t(1) << 18;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t parts = std::min<size_t>({cores, 16, (count + kSlice - 1) / kSlice});
  auto convert = [in, out](size_t from, size_t to) { half_bits(in + from, to - from, out + from); };
  if (parts <= 1) return convert(0, count);
  const size_t step = (count + parts - 1) / parts;
  std::vector<std::thread> threads;
  size_t covered = step;              // [0, step) is this thread's; threads take the slices after it
  try {
    for (; covered < count; covered += step) {
      threads.emplace_back(convert, covered, std::min(count, covered + step));
    }
  } catch (const std::system_error&) {
    // No thread to be had: this one converts what no thread took.
  }
  convert(0, std::min(count, step));
  if (covered < count) convert(covered, count);
  for (std::thread& t : threads) t.join();
}

}  // namespace

StagedUpload::~StagedUpload() {
  if (slots_.empty()) return;
  hipStreamSynchronize(nullptr);     // no copy may still read a slot being freed
  for (Slot& s : slots_) {
    if (s.copied) hipEventDestroy(s.copied);
    if (s.host) hipHostFree(s.host);
  }
}

void StagedUpload::make_slots() {
  slots_.resize(kSlots);
  for (Slot& s : slots_) {
    GPU_CHECK(hipHostMalloc(reinterpret_cast<void**>(&s.host), kSlotBytes, hipHostMallocDefault));
    GPU_CHECK(hipEventCreateWithFlags(&s.copied, hipEventDisableTiming));
  }
}

StagedUpload::Slot& StagedUpload::slot_for(size_t bytes) {
  if (slots_.empty()) make_slots();
  Slot& now = slots_[current_];
  if (now.used + bytes <= kSlotBytes) return now;
  GPU_CHECK(hipEventRecord(now.copied, nullptr));
  current_ = (current_ + 1) % kSlots;
  Slot& next = slots_[current_];
  GPU_CHECK(hipEventSynchronize(next.copied));   // a never-recorded event is complete
  next.used = 0;
  return next;
}

DeviceBuffer StagedUpload::upload(const std::vector<FloatSpan>& parts, DType dtype) {
  const size_t width = dtype_size(dtype);
  size_t total = 0;
  for (const FloatSpan& p : parts) total += p.count;
  DeviceBuffer buf(total * width);
  char* device = buf.as<char>();
  for (const FloatSpan& p : parts) {
    for (size_t done = 0; done < p.count;) {
      // Whole pieces where they fit; a piece bigger than a slot goes in slot-sized parts.
      const size_t want = std::min(p.count - done, kSlotBytes / width);
      Slot& s = slot_for(want * width);
      char* host = s.host + s.used;
      if (dtype == DType::F16) {
        to_half_bits(p.data + done, want, reinterpret_cast<uint16_t*>(host));
      } else {
        std::memcpy(host, p.data + done, want * width);
      }
      GPU_CHECK(hipMemcpyAsync(device, host, want * width, hipMemcpyHostToDevice, nullptr));
      s.used += (want * width + 255) / 256 * 256;   // the next piece starts aligned
      device += want * width;
      done += want;
    }
  }
  return buf;
}

void StagedUpload::finish() {
  if (!slots_.empty()) GPU_CHECK(hipStreamSynchronize(nullptr));
}

}  // namespace lc0rocm
