// pinned_host.cpp - the registry of pinned blocks handed to callers: a
// sorted map from start address to size, so a pointer anywhere inside a
// block (a slice of a caller's array) is found in one lookup.
#include "pinned_host.h"

#include <cstdint>
#include <map>
#include <mutex>

#include "tensor/errors.h"

namespace lc0rocm {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, size_t> blocks;   // start -> bytes
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void* pinned_alloc(size_t bytes) {
  if (bytes == 0) fail(LC0ROCM_INVALID_ARGUMENT, "pinned allocation of 0 bytes");
  void* block = nullptr;
  GPU_CHECK(hipHostMalloc(&block, bytes, hipHostMallocDefault));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.blocks[reinterpret_cast<uintptr_t>(block)] = bytes;
  return block;
}

bool pinned_free(void* block) {
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.blocks.erase(reinterpret_cast<uintptr_t>(block)) == 0) return false;
  }
  GPU_CHECK(hipHostFree(block));
  return true;
}

bool is_pinned(const void* p, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.blocks.upper_bound(start);     // the first block starting after p
  if (it == r.blocks.begin()) return false;
  --it;                                      // the last block starting at or before p
  const size_t offset = start - it->first;
  return offset <= it->second && bytes <= it->second - offset;
}

}  // namespace lc0rocm
