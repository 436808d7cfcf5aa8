// pick_lock.h - the lock that lets search threads pick at once: picking
// takes it shared (it only adds visits in flight, atomically, and links new
// children in), and so does backing up (one thread at a time, under the
// tree mutex; values stored atomically, tree.h); what changes the tree's
// shape (terminal bounds, solid children, undoing a batch or a two-fold
// draw) takes it exclusive. A waiting writer goes first (it holds the tree
// mutex, which the next backup waits for).
//
// Both locks below wait by spinning, then yielding, not by sleeping: they
// are held for microseconds (a pick, a batch's backup) and change hands
// many times a batch, as lc0's RpSharedMutex does (against sleeping on a
// condition variable: the same on the H200 within the spread, +3 % on the
// sim backend on a 2-core VM; docs/history/benchmarks-2026-12.md).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>

namespace lc0core {
namespace search {

// A short busy wait, then the processor given to others (a machine with
// fewer cores than search threads still makes progress).
class Backoff {
 public:
  void pause() {
    if (spins_ < kSpins) {
      ++spins_;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      __asm__ __volatile__("yield");
#endif
    } else {
      std::this_thread::yield();
    }
  }

 private:
  static constexpr int kSpins = 64;
  int spins_ = 0;
};

class PickLock {
 public:
  void lock() {
    state_.fetch_add(kWaitingWriter, std::memory_order_relaxed);
    for (Backoff wait;; wait.pause()) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if ((s & (kWriter | kReaders)) == 0 &&
          state_.compare_exchange_weak(s, s - kWaitingWriter + kWriter, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return;
      }
    }
  }
  void unlock() { state_.fetch_sub(kWriter, std::memory_order_release); }
  void lock_shared() {
    for (Backoff wait;; wait.pause()) {
      uint32_t s = state_.load(std::memory_order_relaxed);
      if ((s & (kWriter | kWaitingWriters)) == 0 &&
          state_.compare_exchange_weak(s, s + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
        return;
      }
    }
  }
  void unlock_shared() { state_.fetch_sub(1, std::memory_order_release); }

 private:
  // One word: readers in the low 16 bits, waiting writers in the next 15,
  // the writer in the top bit (so a reader's check and entry are one step).
  static constexpr uint32_t kReaders = 0xFFFFu;
  static constexpr uint32_t kWaitingWriter = 1u << 16;
  static constexpr uint32_t kWaitingWriters = 0x7FFFu << 16;
  static constexpr uint32_t kWriter = 1u << 31;
  std::atomic<uint32_t> state_{0};
};

// The caller's tree mutex (readers of results and `stop` take it; a worker
// holds it except while it gathers or waits for the network), taken by
// spinning on try_lock first, as the pickers' lock is. A BasicLockable, for
// std::unique_lock and std::condition_variable_any.
// `waited_ns`, when given, adds up the time spent waiting for the mutex
// (the clock is read only when the first try fails).
class TreeMutexLock {
 public:
  explicit TreeMutexLock(std::mutex* tree_mutex, std::atomic<int64_t>* waited_ns = nullptr)
      : tree_mutex_(tree_mutex), waited_ns_(waited_ns) {}
  void lock() {
    if (tree_mutex_->try_lock()) return;
    const auto started = std::chrono::steady_clock::now();
    for (Backoff wait; !tree_mutex_->try_lock(); wait.pause()) {
    }
    if (waited_ns_) {
      const auto waited = std::chrono::steady_clock::now() - started;
      waited_ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count(),
                            std::memory_order_relaxed);
    }
  }
  bool try_lock() { return tree_mutex_->try_lock(); }
  void unlock() { tree_mutex_->unlock(); }

 private:
  std::mutex* tree_mutex_;
  std::atomic<int64_t>* waited_ns_;
};

// Worker mode's exclusive hold on the tree: the caller's mutex and then the
// pickers' lock (always in that order).
class TreeWriteLock {
 public:
  TreeWriteLock(std::mutex* tree_mutex, PickLock* picking, std::atomic<int64_t>* waited_ns = nullptr)
      : tree_(tree_mutex, waited_ns), picking_(picking) {}
  void lock() {
    tree_.lock();
    picking_->lock();
  }
  void unlock() {
    picking_->unlock();
    tree_.unlock();
  }

 private:
  TreeMutexLock tree_;
  PickLock* picking_;
};

}  // namespace search
}  // namespace lc0core
