// nn_cache_table.cpp - probing, growth and backward-shift deletion of one
// NN cache shard.
#include "nn_cache_table.h"

#include <algorithm>
#include <new>

namespace lc0core {
namespace search {

CacheBlock* CacheBlock::create(int count) {
  void* raw = ::operator new(sizeof(CacheBlock) + size_t(count) * sizeof(uint32_t));
  CacheBlock* block = static_cast<CacheBlock*>(raw);
  block->count = count;
  return block;
}

void CacheBlock::destroy(CacheBlock* block) { ::operator delete(static_cast<void*>(block)); }

size_t CacheTable::find_slot(uint64_t key) const {
  if (size_ == 0) return slots_.size();
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(key);; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.block) return slots_.size();           // never full: a run ends
    if (s.key == key) return i;
  }
}

const CacheBlock* CacheTable::find(uint64_t key) const {
  const size_t i = find_slot(key);
  return i < slots_.size() ? slots_[i].block : nullptr;
}

bool CacheTable::put(uint64_t key, CacheBlock* block) {
  const size_t i = find_slot(key);
  if (i < slots_.size()) {
    CacheBlock::destroy(slots_[i].block);
    slots_[i].block = block;
    return false;
  }
  if ((size_ + 1) * 4 > slots_.size() * 3) grow();
  place(Slot{key, block});
  ++size_;
  return true;
}

void CacheTable::place(const Slot& slot) {
  const size_t mask = slots_.size() - 1;
  size_t i = home(slot.key);
  while (slots_[i].block) i = (i + 1) & mask;
  slots_[i] = slot;
}

bool CacheTable::erase(uint64_t key) {
  size_t hole = find_slot(key);
  if (hole == slots_.size()) return false;
  CacheBlock::destroy(slots_[hole].block);
  --size_;
  // Backward shift: later members of the run that may live in the hole (their
  // home is not cyclically in (hole, j]) move up, so no tombstones are needed.
  const size_t mask = slots_.size() - 1;
  for (size_t j = (hole + 1) & mask; slots_[j].block; j = (j + 1) & mask) {
    const size_t h = home(slots_[j].key);
    const bool stays = hole < j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{0, nullptr};
  return true;
}

void CacheTable::clear() {
  for (Slot& s : slots_) {
    if (s.block) CacheBlock::destroy(s.block);
  }
  if (slots_.size() <= kKeptSlots) {
    // A small table is kept, emptied: a run of short searches (analysis
    // clears the cache for each position) then regrows nothing.
    std::fill(slots_.begin(), slots_.end(), Slot{0, nullptr});
  } else {
    std::vector<Slot>().swap(slots_);
    shift_ = 64;
  }
  size_ = 0;
}

void CacheTable::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  const size_t bigger = old.empty() ? 64 : old.size() * 2;
  slots_.assign(bigger, Slot{0, nullptr});
  shift_ = 64 - __builtin_ctzll(bigger);
  for (const Slot& s : old) {
    if (s.block) place(s);
  }
}

}  // namespace search
}  // namespace lc0core
