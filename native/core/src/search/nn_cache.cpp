// nn_cache.cpp - insertion and eviction of the NN cache.
#include "nn_cache.h"

namespace lc0core {
namespace search {

bool NNCache::lookup(uint64_t key, CacheHit* hit) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  hits_.fetch_add(1, std::memory_order_relaxed);
  const CacheEntry& entry = it->second;
  hit->q = entry.q, hit->d = entry.d, hit->m = entry.m, hit->count = entry.count;
  for (int i = 0; i < entry.count; ++i) hit->edges[i] = entry.edges[i];
  return true;
}

void NNCache::put(uint64_t key, const Move* moves, const uint16_t* priors, int count, double q,
                  float d, float m) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (capacity_ <= 0) return;
  auto found = entries_.find(key);
  const bool fresh = found == entries_.end();
  CacheEntry& entry = fresh ? entries_[key] : found->second;
  entry.q = q, entry.d = d, entry.m = m, entry.count = count;
  entry.edges.reset(count ? new uint32_t[count] : nullptr);
  for (int i = 0; i < count; ++i) entry.edges[i] = uint32_t(moves[i].raw) | uint32_t(priors[i]) << 16;
  if (!fresh) return;      // an update keeps its age, like the reference's OrderedDict
  order_.push_back(key);
  evict_over_capacity();
}

void NNCache::set_capacity(long long capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = capacity < 0 ? 0 : capacity;
  evict_over_capacity();
}

void NNCache::evict_over_capacity() {
  while ((long long)entries_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace search
}  // namespace lc0core
