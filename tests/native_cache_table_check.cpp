// The NN cache's open-addressing table (native/core/src/search/
// nn_cache_table.h) against std::unordered_map: random put / erase / find
// over keys that collide in their home slots, then clear and reuse: a
// large table (its slots freed) and a small one (its slots kept, emptied).
// Prints "ok" or the first mismatch; exit status 0 only when all agree.
#include <cstdio>
#include <random>
#include <unordered_map>
#include "search/nn_cache_table.h"

using lc0core::search::CacheBlock;
using lc0core::search::CacheTable;

int main() {
  std::mt19937_64 rng(1);
  CacheTable table;
  std::unordered_map<uint64_t, uint32_t> reference;
  const uint64_t spans[] = {5000, 500, 500, 5000, 500};
  for (uint64_t span : spans) {
    for (uint32_t step = 0; step < 200000; ++step) {
      const uint64_t key = (rng() % span) * 0x100000001ull;   // keys sharing low bits
      switch (rng() % 3) {
        case 0: {
          CacheBlock* block = CacheBlock::create(1);
          block->edges()[0] = step;
          if (table.put(key, block) != (reference.count(key) == 0)) return std::puts("put: fresh differs"), 1;
          reference[key] = step;
          break;
        }
        case 1:
          if (table.erase(key) != (reference.erase(key) == 1)) return std::puts("erase differs"), 1;
          break;
        default: {
          const CacheBlock* block = table.find(key);
          const auto found = reference.find(key);
          if ((block != nullptr) != (found != reference.end()) ||
              (block != nullptr && block->edges()[0] != found->second))
            return std::puts("find differs"), 1;
        }
      }
      if (table.size() != reference.size()) return std::puts("size differs"), 1;
    }
    table.clear();
    reference.clear();
    if (table.find(0) != nullptr || table.size() != 0) return std::puts("clear left entries"), 1;
  }
  std::puts("ok");
  return 0;
}
