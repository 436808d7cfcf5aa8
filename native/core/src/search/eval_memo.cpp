// eval_memo.cpp - the shared network answers: keys, lookups, insertion and
// eviction; and the memo's C ABI (include/lc0core_eval_memo.h).
#include "eval_memo.h"
#include <algorithm>
#include <cstring>
#include "../../include/lc0core_eval_memo.h"
#include "../encoder.h"
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

EvalMemo::EvalMemo(long long capacity)
    : per_shard_(size_t(std::max<long long>(1, capacity / kShards))) {}

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
  const auto found = s.entries.find(key.lo);
  if (found == s.entries.end()) return false;
  const Entry& e = found->second;
  if (e.hi != key.hi || e.moves.size() != size_t(count) * 2) return false;
  const uint32_t* stored = e.moves.data();
  for (int i = 0; i < count; ++i) {
    if (stored[i] != uint32_t(indices[i])) return false;
  }
  for (int i = 0; i < count; ++i) policy_row[indices[i]] = float_of(stored[count + i]);
  std::copy(e.wdl, e.wdl + 3, wdl);
  *moves_left = e.moves_left;
  hits_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void EvalMemo::put(const MemoKey& key, const int* indices, int count, const float* policy_row,
                   const float* wdl, float moves_left) {
  Entry e;
  e.hi = key.hi;
  std::copy(wdl, wdl + 3, e.wdl);
  e.moves_left = moves_left;
  e.moves.resize(size_t(count) * 2);
  for (int i = 0; i < count; ++i) {
    e.moves[i] = uint32_t(indices[i]);
    e.moves[count + i] = bits_of(policy_row[indices[i]]);
  }
  Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto placed = s.entries.insert_or_assign(key.lo, std::move(e));
  if (!placed.second) return;          // replaced: keeps its age
  s.order.push_back(key.lo);
  while (s.order.size() > per_shard_) {
    s.entries.erase(s.order.front());
    s.order.pop_front();
  }
}

long long EvalMemo::size() const {
  long long total = 0;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    total += (long long)s.entries.size();
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
