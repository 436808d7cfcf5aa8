// eval_memo.cpp - the shared network answers: keys, lookups, insertion and
// eviction; and the memo's C ABI (include/lc0core_eval_memo.h).
#include "eval_memo.h"
#include <algorithm>
#include <cstring>
#include "../../include/lc0core_eval_memo.h"
#include "../encoder.h"
#include "../position.h"
#include "../errors.h"

namespace lc0core {
namespace search {
namespace {

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// MurmurHash3's finalizer: every input bit reaches every output bit.
uint64_t finish(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  return x ^ (x >> 33);
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

// An answer's words: key.hi (2), count, wdl (3), moves left, then count
// policy indices and count logits.
constexpr uint64_t kHeaderWords = 7;
constexpr uint64_t kTypicalWords = kHeaderWords + 2 * 36;

EvalMemo::EvalMemo(long long capacity) {
  const uint64_t per_shard = uint64_t(std::max<long long>(1, capacity / kShards));
  // At least the largest answer (218 moves) fits.
  ring_words_ = std::max<uint64_t>(per_shard * kTypicalWords, kHeaderWords + 2 * kMaxMoves);
  buckets_ = 1;
  while (buckets_ * kWays < 2 * per_shard) buckets_ *= 2;
  for (Shard& s : shards_) {
    s.ring.reset(new uint32_t[ring_words_]);    // not zeroed: pages are touched as answers come
    s.slots.reset(new Slot[buckets_ * kWays]());
  }
}

MemoKey EvalMemo::key(const uint64_t* masks, const float* values) {
  // Two chains with different multipliers and rotations over the same
  // words: a false hit needs both 64-bit hashes to collide.
  uint64_t a = 0x243F6A8885A308D3ull, b = 0x13198A2E03707344ull;
  for (int i = 0; i < kNumPlanes; ++i) {
    const uint64_t w = masks[i] ^ (uint64_t(bits_of(values[i])) << 32 | uint64_t(i));
    a = rotl((a ^ w) * 0x9E3779B97F4A7C15ull, 31);
    b = rotl((b + rotl(w, 23)) * 0xD6E8FEB86659FD93ull, 27) ^ masks[i];
  }
  return MemoKey{finish(a), finish(b ^ 0xA4093822299F31D0ull)};
}

bool EvalMemo::lookup(const MemoKey& key, const int* indices, int count, float* policy_row,
                      float* wdl, float* moves_left) {
  lookups_.fetch_add(1, std::memory_order_relaxed);
  Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mutex);
  const Slot* bucket = s.slots.get() + (key.lo & (buckets_ - 1)) * kWays;
  for (int w = 0; w < kWays; ++w) {
    if (bucket[w].lo != key.lo || !intact(s, bucket[w].at)) continue;
    const uint32_t* a = answer(s, bucket[w].at);
    if ((uint64_t(a[0]) | uint64_t(a[1]) << 32) != key.hi || a[2] != uint32_t(count)) return false;
    const uint32_t* stored = a + kHeaderWords;
    for (int i = 0; i < count; ++i) {
      if (stored[i] != uint32_t(indices[i])) return false;
    }
    for (int i = 0; i < count; ++i) policy_row[indices[i]] = float_of(stored[count + i]);
    for (int i = 0; i < 3; ++i) wdl[i] = float_of(a[3 + i]);
    *moves_left = float_of(a[6]);
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void EvalMemo::put(const MemoKey& key, const int* indices, int count, const float* policy_row,
                   const float* wdl, float moves_left) {
  const uint64_t words = kHeaderWords + 2 * uint64_t(count);
  Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mutex);
  // An answer is never split by the ring's end: skip to its start.
  if (s.head % ring_words_ + words > ring_words_) s.head += ring_words_ - s.head % ring_words_;
  uint32_t* a = s.ring.get() + s.head % ring_words_;
  a[0] = uint32_t(key.hi), a[1] = uint32_t(key.hi >> 32), a[2] = uint32_t(count);
  for (int i = 0; i < 3; ++i) a[3 + i] = bits_of(wdl[i]);
  a[6] = bits_of(moves_left);
  for (int i = 0; i < count; ++i) {
    a[kHeaderWords + i] = uint32_t(indices[i]);
    a[kHeaderWords + count + i] = bits_of(policy_row[indices[i]]);
  }
  // The slot: the key's own, else a free or overwritten one, else the oldest.
  Slot* bucket = s.slots.get() + (key.lo & (buckets_ - 1)) * kWays;
  Slot* slot = nullptr;
  for (int w = 0; w < kWays && !slot; ++w) {
    if (bucket[w].lo == key.lo) slot = &bucket[w];
  }
  for (int w = 0; w < kWays && !slot; ++w) {
    if (!intact(s, bucket[w].at)) slot = &bucket[w];
  }
  if (!slot) {
    slot = &bucket[0];
    for (int w = 1; w < kWays; ++w) {
      if (bucket[w].at < slot->at) slot = &bucket[w];
    }
  }
  *slot = Slot{key.lo, s.head + 1};
  s.head += words;
}

long long EvalMemo::size() const {
  long long total = 0;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (uint64_t i = 0; i < buckets_ * kWays; ++i) total += intact(s, s.slots[i].at);
  }
  return total;
}

}  // namespace search
}  // namespace lc0core

LC0CORE_EXPORT int lc0core_eval_memo_create(long long capacity, lc0core_eval_memo** out) {
  return lc0core::guarded([&] {
    lc0core::require(out, "out");
    *out = nullptr;
    if (capacity < 1) throw lc0core::Error(LC0CORE_INVALID_ARGUMENT, "memo capacity must be >= 1");
    *out = new lc0core_eval_memo(capacity);
    return LC0CORE_OK;
  });
}

LC0CORE_EXPORT void lc0core_eval_memo_destroy(lc0core_eval_memo* memo) { delete memo; }

LC0CORE_EXPORT int lc0core_eval_memo_get_stats(lc0core_eval_memo* memo, lc0core_eval_memo_stats* out) {
  return lc0core::guarded([&] {
    lc0core::require(memo, "memo");
    lc0core::require(out, "out");
    out->lookups = memo->memo.lookups();
    out->hits = memo->memo.hits();
    out->entries = memo->memo.size();
    return LC0CORE_OK;
  });
}
