// nn_cache_table.h - one shard of the NN cache: an open-addressing hash table
// (linear probing, deletion by backward shift) from a 64-bit key to an entry
// block it owns. A slot holds the key next to the block pointer, so a probe
// reads one array and a hit one block more (the entry's values and its edges
// in one allocation), where a node-based map chases a bucket, a node and an
// edge array. Not thread-safe: the cache locks around it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lc0core {
namespace search {

// One cached evaluation: values, then `count` edges (move | prior code << 16).
struct CacheBlock {
  double q;                            // W - L, side to move's view
  float d, m;
  int32_t count;
  uint32_t* edges() { return reinterpret_cast<uint32_t*>(this + 1); }
  const uint32_t* edges() const { return reinterpret_cast<const uint32_t*>(this + 1); }
  static CacheBlock* create(int count);
  static void destroy(CacheBlock* block);
};

class CacheTable {
 public:
  CacheTable() = default;
  ~CacheTable() { clear(); }
  CacheTable(const CacheTable&) = delete;
  CacheTable& operator=(const CacheTable&) = delete;

  // The key's block, or null.
  const CacheBlock* find(uint64_t key) const;
  // Stores the key's block (the table takes ownership), freeing the block
  // it replaces; true when the key was absent.
  bool put(uint64_t key, CacheBlock* block);
  // Drops a key and frees its block; false when absent.
  bool erase(uint64_t key);
  void clear();                        // frees every block, and the slots of a large table
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key;
    CacheBlock* block;                 // null: empty
  };
  size_t home(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  size_t find_slot(uint64_t key) const;   // the key's slot, or slots_.size()
  void place(const Slot& slot);           // into the first empty slot of its run
  void grow();
  static constexpr size_t kKeptSlots = 4096;   // clear() keeps up to these (64 KB)

  std::vector<Slot> slots_;            // a power of two, at most 3/4 full
  int shift_ = 64;                     // 64 - log2(slots_.size())
  size_t size_ = 0;
};

}  // namespace search
}  // namespace lc0core
