// eval_memo.h - network answers shared by the searches of one network
// (include/lc0core_eval_memo.h): keyed by the exact input planes, each the
// logits of the moves its request asked about, the WDL and the moves left.
// No allocation per answer: each shard writes its answers one after another
// into a ring of words, the newest over the oldest, and finds them through
// a table of 4-slot buckets (as a chess engine's transposition table); a
// slot whose answer the ring has overwritten is a miss and free to reuse.
// Each shard has its own lock, so searches on different threads rarely
// wait on each other.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace lc0core {
namespace search {

struct MemoKey {
  uint64_t lo = 0, hi = 0;           // two independent 64-bit hashes of the planes
};

class EvalMemo {
 public:
  // Room for about `capacity` answers of 36 moves (more of fewer moves).
  explicit EvalMemo(long long capacity);
  EvalMemo(const EvalMemo&) = delete;
  EvalMemo& operator=(const EvalMemo&) = delete;

  // The key of one request's input: kNumPlanes masks and values.
  static MemoKey key(const uint64_t* masks, const float* values);
  // On a hit, writes the logits at `indices` into `policy_row` (a
  // kPolicySize row; other entries untouched), `wdl` (3) and *moves_left.
  // A miss when absent, overwritten, or stored for other indices.
  bool lookup(const MemoKey& key, const int* indices, int count, float* policy_row, float* wdl,
              float* moves_left);
  // Keeps the answer to a request: `policy_row`'s logits at `indices`.
  void put(const MemoKey& key, const int* indices, int count, const float* policy_row,
           const float* wdl, float moves_left);

  long long lookups() const { return lookups_.load(std::memory_order_relaxed); }
  long long hits() const { return hits_.load(std::memory_order_relaxed); }
  long long size() const;            // answers findable now

 private:
  static constexpr int kShards = 64;
  static constexpr int kWays = 4;    // slots per bucket
  struct Slot {
    uint64_t lo;
    uint64_t at;                     // 1 + the answer's first word in the shard's writing; 0: empty
  };
  struct alignas(64) Shard {         // a cache line of its own: no false sharing of locks
    mutable std::mutex mutex;
    std::unique_ptr<uint32_t[]> ring;
    uint64_t head = 0;               // words written so far (the next answer's position)
    std::unique_ptr<Slot[]> slots;   // buckets_ x kWays
  };
  Shard& shard(const MemoKey& key) { return shards_[(key.lo >> 58) % kShards]; }
  bool intact(const Shard& s, uint64_t at) const { return at != 0 && at - 1 + ring_words_ >= s.head; }
  const uint32_t* answer(const Shard& s, uint64_t at) const { return s.ring.get() + (at - 1) % ring_words_; }

  Shard shards_[kShards];
  uint64_t ring_words_;              // per shard
  uint64_t buckets_;                 // per shard, a power of two
  std::atomic<long long> lookups_{0}, hits_{0};
};

}  // namespace search
}  // namespace lc0core

// The C ABI's handle (include/lc0core_eval_memo.h).
struct lc0core_eval_memo {
  explicit lc0core_eval_memo(long long capacity) : memo(capacity) {}
  lc0core::search::EvalMemo memo;
};
