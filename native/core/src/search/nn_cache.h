// nn_cache.h - lc0's NN cache: network results keyed by the position and its
// repetition count (history ignored), bounded, oldest entry dropped first.
// An entry keeps the legal moves in edge order with their stored priors, so
// a hit expands a node with no move generation and no network call.
// Searches look entries up while others insert (leaves are expanded outside
// the tree lock), so every access takes the cache's own lock and a lookup
// copies the entry out.
#pragma once
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include "../position.h"

namespace lc0core {
namespace search {

struct CacheEntry {
  double q = 0.0;          // W - L, side to move's view
  float d = 0.0f, m = 0.0f;
  int count = 0;
  std::unique_ptr<uint32_t[]> edges;   // move | prior code << 16, edge order
};

// A copy of an entry, taken under the cache's lock.
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
  bool contains(uint64_t key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.count(key) != 0;
  }
  void put(uint64_t key, const Move* moves, const uint16_t* priors, int count, double q,
           float d, float m);
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
    order_.clear();
  }
  void set_capacity(long long capacity);
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }
  uint64_t hits() const { return hits_.load(); }

 private:
  void evict_over_capacity();
  mutable std::mutex mutex_;
  long long capacity_;
  std::unordered_map<uint64_t, CacheEntry> entries_;
  std::deque<uint64_t> order_;
  std::atomic<uint64_t> hits_{0};
};

}  // namespace search
}  // namespace lc0core
