// nn_cache.cpp - insertion and eviction of the NN cache.
#include "nn_cache.h"

namespace lc0core {
namespace search {

void NNCache::put(uint64_t key, const Move* moves, const uint16_t* priors, int count, double q,
                  float d, float m) {
  if (capacity_ <= 0) return;
  auto found = entries_.find(key);
  const bool fresh = found == entries_.end();
  CacheEntry& entry = fresh ? entries_[key] : found->second;
  entry.q = q, entry.d = d, entry.m = m, entry.count = count;
  entry.edges.reset(count ? new uint32_t[count] : nullptr);
  for (int i = 0; i < count; ++i) entry.edges[i] = uint32_t(moves[i].raw) | uint32_t(priors[i]) << 16;
  if (!fresh) return;      // an update keeps its age, like the reference's OrderedDict
  order_.push_back(key);
  while ((long long)entries_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

void NNCache::set_capacity(long long capacity) {
  capacity_ = capacity < 0 ? 0 : capacity;
  while ((long long)entries_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

}  // namespace search
}  // namespace lc0core
