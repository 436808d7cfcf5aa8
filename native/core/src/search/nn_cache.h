// nn_cache.h - lc0's NN cache: network results keyed by the position and its
// repetition count (history ignored), bounded, oldest entry dropped first.
// An entry keeps the legal moves in edge order with their stored priors, so
// a hit expands a node with no move generation and no network call.
// Searches look entries up while others insert (leaves are expanded outside
// the tree lock): entries live in shards, each an open-addressing table with
// its own lock, so lookups of different positions rarely wait on each other;
// a lookup copies the entry out. Insertions and evictions also take the lock
// of the one age order (a queue of keys), which keeps "oldest first" exact.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include "../position.h"
#include "nn_cache_table.h"

namespace lc0core {
namespace search {

// A copy of an entry, taken under its shard's lock.
struct CacheHit {
  double q = 0.0;
  float d = 0.0f, m = 0.0f;
  int count = 0;
  uint32_t edges[kMaxMoves];           // move | prior code << 16, edge order
};

class NNCache {
 public:
  explicit NNCache(long long capacity) : capacity_(capacity < 0 ? 0 : capacity) {}
  static uint64_t key(const Position& pos, int repetitions) {
    return position_hash(pos) + uint64_t(repetitions) * 0x9E3779B97F4A7C15ull;
  }
  // Copies the entry into *hit and counts a hit; false when absent.
  bool lookup(uint64_t key, CacheHit* hit);
  bool contains(uint64_t key) const;
  void put(uint64_t key, const Move* moves, const uint16_t* priors, int count, double q,
           float d, float m);
  void clear();
  void set_capacity(long long capacity);
  size_t size() const {
    std::lock_guard<std::mutex> lock(order_mutex_);
    return order_.size();
  }
  uint64_t hits() const { return hits_.load(); }

 private:
  static constexpr int kShards = 16;
  struct alignas(64) Shard {           // a cache line of its own: no false sharing of locks
    mutable std::mutex mutex;
    CacheTable table;
  };
  Shard& shard(uint64_t key) { return shards_[key & (kShards - 1)]; }
  const Shard& shard(uint64_t key) const { return shards_[key & (kShards - 1)]; }
  void evict_over_capacity();          // order_mutex_ held

  Shard shards_[kShards];
  mutable std::mutex order_mutex_;     // taken before a shard's, never after
  std::atomic<long long> capacity_;    // written under order_mutex_; put reads it first without
  std::deque<uint64_t> order_;         // every key, oldest first
  std::atomic<uint64_t> hits_{0};
};

}  // namespace search
}  // namespace lc0core
