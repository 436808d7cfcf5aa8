// eval_memo.h - network answers shared by the searches of one network
// (include/lc0core_eval_memo.h): keyed by the exact input planes, each the
// logits of the moves its request asked about, the WDL and the moves left.
// Shards, each a map with its own lock and its own age order, so searches
// on different threads rarely wait on each other.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace lc0core {
namespace search {

struct MemoKey {
  uint64_t lo = 0, hi = 0;           // two independent 64-bit hashes of the planes
};

class EvalMemo {
 public:
  explicit EvalMemo(long long capacity);
  EvalMemo(const EvalMemo&) = delete;
  EvalMemo& operator=(const EvalMemo&) = delete;

  // The key of one request's input: kNumPlanes masks and values.
  static MemoKey key(const uint64_t* masks, const float* values);
  // On a hit, writes the logits at `indices` into `policy_row` (a
  // kPolicySize row; other entries untouched), `wdl` (3) and *moves_left.
  // A miss when absent or when the entry was stored for other indices.
  bool lookup(const MemoKey& key, const int* indices, int count, float* policy_row, float* wdl,
              float* moves_left);
  // Keeps the answer to a request: `policy_row`'s logits at `indices`.
  void put(const MemoKey& key, const int* indices, int count, const float* policy_row,
           const float* wdl, float moves_left);

  long long lookups() const { return lookups_.load(std::memory_order_relaxed); }
  long long hits() const { return hits_.load(std::memory_order_relaxed); }
  long long size() const;

 private:
  struct Entry {
    uint64_t hi;
    float wdl[3];
    float moves_left;
    std::vector<uint32_t> moves;     // count policy indices, then count logits' bits
  };
  struct alignas(64) Shard {         // a cache line of its own: no false sharing of locks
    mutable std::mutex mutex;
    std::unordered_map<uint64_t, Entry> entries;   // by MemoKey::lo
    std::deque<uint64_t> order;      // keys, oldest first
  };
  static constexpr int kShards = 64;
  Shard& shard(const MemoKey& key) { return shards_[(key.lo >> 58) % kShards]; }

  Shard shards_[kShards];
  size_t per_shard_;
  std::atomic<long long> lookups_{0}, hits_{0};
};

}  // namespace search
}  // namespace lc0core

// The C ABI's handle (include/lc0core_eval_memo.h).
struct lc0core_eval_memo {
  explicit lc0core_eval_memo(long long capacity) : memo(capacity) {}
  lc0core::search::EvalMemo memo;
};
