// nn_cache.cpp - lookup, insertion and eviction of the NN cache.
#include "nn_cache.h"

namespace lc0core {
namespace search {

bool NNCache::lookup(uint64_t key, CacheHit* hit) {
  Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mutex);
  const CacheBlock* entry = s.table.find(key);
  if (!entry) return false;
  hits_.fetch_add(1, std::memory_order_relaxed);
  hit->q = entry->q, hit->d = entry->d, hit->m = entry->m, hit->count = entry->count;
  const uint32_t* edges = entry->edges();
  for (int i = 0; i < entry->count; ++i) hit->edges[i] = edges[i];
  return true;
}

bool NNCache::contains(uint64_t key) const {
  const Shard& s = shard(key);
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.table.find(key) != nullptr;
}

void NNCache::put(uint64_t key, const Move* moves, const uint16_t* priors, int count, double q,
                  float d, float m) {
  if (capacity_.load(std::memory_order_relaxed) <= 0) return;
  // The block is made and filled before any lock is taken: every search
  // thread puts each of its batch's results through the one age order.
  CacheBlock* block = CacheBlock::create(count);
  block->q = q, block->d = d, block->m = m;
  uint32_t* edges = block->edges();
  for (int i = 0; i < count; ++i) edges[i] = uint32_t(moves[i].raw) | uint32_t(priors[i]) << 16;
  std::lock_guard<std::mutex> order_lock(order_mutex_);
  if (capacity_.load(std::memory_order_relaxed) <= 0) {     // set to 0 meanwhile
    CacheBlock::destroy(block);
    return;
  }
  Shard& s = shard(key);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    // An update keeps its age, like the reference's OrderedDict.
    if (!s.table.put(key, block)) return;
  }
  order_.push_back(key);
  evict_over_capacity();
}

void NNCache::clear() {
  std::lock_guard<std::mutex> order_lock(order_mutex_);
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.table.clear();
  }
  order_.clear();
}

void NNCache::set_capacity(long long capacity) {
  std::lock_guard<std::mutex> order_lock(order_mutex_);
  capacity_.store(capacity < 0 ? 0 : capacity, std::memory_order_relaxed);
  evict_over_capacity();
}

void NNCache::evict_over_capacity() {
  while ((long long)order_.size() > capacity_.load(std::memory_order_relaxed)) {
    const uint64_t oldest = order_.front();
    order_.pop_front();
    Shard& s = shard(oldest);
    std::lock_guard<std::mutex> lock(s.mutex);
    s.table.erase(oldest);
  }
}

}  // namespace search
}  // namespace lc0core
