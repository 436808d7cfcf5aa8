// pool.h - the tree's storage: slots in fixed-size chunks, addressed by
// 32-bit ids, allocated by many threads at once without a lock.
//
// Ids stay valid and growth never copies the tree: the chunk table holds a
// pointer for every 32-bit id's chunk from the start, so a reader of a slot
// never races with a new chunk. Search threads and their picking tasks
// allocate a node for every child they spawn and a run of edges for every
// leaf they expand, hundreds of thousands a second: the next free id moves
// by compare-and-swap, and only a new chunk (once per 65,536 nodes or
// 262,144 edges) takes a lock. (Locking and unlocking a mutex around every
// allocation took 29 % of the CPU samples of maia-1900's search with five
// threads on an H100 host: the CPU profile in BENCHMARKS.md.)
//
// A chunk's slots are left unwritten until allocated (whoever allocates one
// assigns it whole): a small tree touches only the pages it uses, not a
// whole chunk (a node chunk is 3.7 MB; analysis builds a tree per position).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>

namespace lc0core {
namespace search {

template <typename T, int kShift>
class Pool {
  static_assert(std::is_trivially_copyable<T>::value && std::is_trivially_destructible<T>::value,
                "slots are raw storage, assigned when allocated");

 public:
  static constexpr uint32_t kChunk = 1u << kShift;
  static constexpr size_t kChunks = size_t(1) << (32 - kShift);

  // The table comes zeroed from calloc, untouched: a small tree's process
  // keeps none of its pages resident (a search handle each, many at once in
  // analysis).
  Pool() : chunks_(static_cast<T**>(std::calloc(kChunks, sizeof(T*)))) {
    if (!chunks_) throw std::bad_alloc();
  }
  ~Pool() { free_from(0); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // A slot's chunk was published before its id was (the id reaches a
  // reader through a link stored with release after the allocation), and a
  // chunk's pointer is written once: a plain read finds it, and the
  // compiler may keep it across a loop over a node's edges.
  T& operator[](uint32_t id) { return chunks_[id >> kShift][id & (kChunk - 1)]; }
  const T& operator[](uint32_t id) const { return chunks_[id >> kShift][id & (kChunk - 1)]; }

  // `count` (1..kChunk) consecutive slots that do not cross a chunk; returns
  // the first id. Safe from any number of threads at once; one thread alone
  // gets the same ids in the same order as ever.
  uint32_t allocate(uint32_t count) {
    uint32_t next = used_.load(std::memory_order_relaxed), first;
    do {
      first = next;
      if ((first & (kChunk - 1)) + count > kChunk) first = ((first >> kShift) + 1) << kShift;
    } while (!used_.compare_exchange_weak(next, first + count, std::memory_order_relaxed));
    ensure_chunk(first >> kShift);
    return first;
  }
  uint32_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t bytes() const { return size_t(chunks_made_.load(std::memory_order_relaxed)) * sizeof(T) * kChunk; }
  // Every slot free again; the first chunk and the chunk table are kept, so
  // a run of small trees (analysis: one per position) allocates nothing.
  // Not while others allocate.
  void reset() {
    free_from(1);
    used_.store(0, std::memory_order_relaxed);
  }

 private:
  // The one place a chunk's pointer is read while it may be written (by
  // the thread that makes it): atomically.
  void ensure_chunk(size_t chunk) {
    if (__atomic_load_n(&chunks_[chunk], __ATOMIC_ACQUIRE) != nullptr) return;
    std::lock_guard<std::mutex> lock(grow_mutex_);
    if (__atomic_load_n(&chunks_[chunk], __ATOMIC_RELAXED) != nullptr) return;
    __atomic_store_n(&chunks_[chunk], static_cast<T*>(::operator new(sizeof(T) * kChunk)), __ATOMIC_RELEASE);
    chunks_made_.fetch_add(1, std::memory_order_relaxed);
  }
  void free_from(size_t first) {
    const uint32_t used = used_.load(std::memory_order_relaxed);
    const size_t end = used == 0 ? 1 : size_t((used - 1) >> kShift) + 1;   // chunks made lie below
    for (size_t i = first; i < end; ++i) {
      T* chunk = chunks_[i];
      if (chunk == nullptr) continue;
      chunks_[i] = nullptr;
      ::operator delete(chunk);
      chunks_made_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  struct FreeTable {
    void operator()(T** table) const { std::free(table); }
  };
  std::unique_ptr<T*[], FreeTable> chunks_;
  std::atomic<uint32_t> used_{0};
  std::atomic<uint32_t> chunks_made_{0};
  std::mutex grow_mutex_;              // a new chunk only
};

}  // namespace search
}  // namespace lc0core
