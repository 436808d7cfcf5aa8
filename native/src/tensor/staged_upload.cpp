#include "staged_upload.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>

#include "half_bits.h"
#include "linear16.h"

namespace lc0rocm {
namespace {

// Values [from, to) of `part` into `out`, as `dtype` (float32 or half bits).
void convert(const FloatSpan& part, size_t from, size_t to, DType dtype, char* out) {
  constexpr size_t kChunk = 1024;                  // LINEAR16 decoded a cache-sized chunk at a time
  float decoded[kChunk];
  for (size_t at = from; at < to;) {
    const size_t n = part.linear16 ? std::min(kChunk, to - at) : to - at;
    if (part.linear16) linear16_to_float(part.linear16 + at, n, part.lo, part.span, decoded);
    const float* values = part.linear16 ? decoded : part.data + at;
    if (dtype == DType::F16) {
      half_bits(values, n, reinterpret_cast<uint16_t*>(out) + (at - from));
    } else {
      std::memcpy(out + (at - from) * sizeof(float), values, n * sizeof(float));
    }
    at += n;
  }
}

// convert() in slices on several threads when there are many values.
void convert_in_slices(const FloatSpan& part, size_t from, size_t count, DType dtype, char* out) {
  constexpr size_t kSlice = size_t(1) << 18;
  const size_t width = dtype_size(dtype);
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const bool work = dtype == DType::F16 || part.linear16;   // else a copy: one thread
  const size_t parts = work ? std::min<size_t>({cores, 16, (count + kSlice - 1) / kSlice}) : 1;
  auto slice = [&](size_t a, size_t b) { convert(part, from + a, from + b, dtype, out + a * width); };
  if (parts <= 1) return slice(0, count);
  const size_t step = (count + parts - 1) / parts;
  std::vector<std::thread> threads;
  size_t covered = step;              // [0, step) is this thread's; threads take the slices after it
  try {
    for (; covered < count; covered += step) {
      threads.emplace_back(slice, covered, std::min(count, covered + step));
    }
  } catch (const std::system_error&) {
    // No thread to be had: this one converts what no thread took.
  }
  slice(0, std::min(count, step));
  if (covered < count) slice(covered, count);
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
  now.recorded = true;
  current_ = (current_ + 1) % kSlots;
  Slot& next = slots_[current_];
  // Waited only once recorded: runtimes differ on a never-recorded event (HIP-CPU refuses it).
  if (next.recorded) GPU_CHECK(hipEventSynchronize(next.copied));
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
      convert_in_slices(p, done, want, dtype, host);
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
