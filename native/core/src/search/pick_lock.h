// pick_lock.h - the lock that lets search threads pick at once: picking
// takes it shared (it only adds visits in flight, atomically, and links new
// children in), everything else that changes the tree takes it exclusive.
// A waiting writer goes first (backing up is short, and a search thread
// waiting to back up holds a batch the GPU has finished): std::shared_mutex
// on glibc lets a stream of readers starve a writer.
#pragma once
#include <condition_variable>
#include <mutex>

namespace lc0core {
namespace search {

class PickLock {
 public:
  void lock() {
    std::unique_lock<std::mutex> guard(mutex_);
    ++writers_waiting_;
    changed_.wait(guard, [this] { return !writer_ && readers_ == 0; });
    --writers_waiting_;
    writer_ = true;
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      writer_ = false;
    }
    changed_.notify_all();
  }
  void lock_shared() {
    std::unique_lock<std::mutex> guard(mutex_);
    changed_.wait(guard, [this] { return !writer_ && writers_waiting_ == 0; });
    ++readers_;
  }
  void unlock_shared() {
    bool last;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      last = --readers_ == 0;
    }
    if (last) changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int readers_ = 0, writers_waiting_ = 0;
  bool writer_ = false;
};

// Worker mode's exclusive hold on the tree: the caller's mutex (readers of
// results and `stop` take it) and then the pickers' lock. A BasicLockable,
// for std::unique_lock and std::condition_variable_any.
class TreeWriteLock {
 public:
  TreeWriteLock(std::mutex* tree_mutex, PickLock* picking) : tree_mutex_(tree_mutex), picking_(picking) {}
  void lock() {
    tree_mutex_->lock();
    picking_->lock();
  }
  void unlock() {
    picking_->unlock();
    tree_mutex_->unlock();
  }

 private:
  std::mutex* tree_mutex_;
  PickLock* picking_;
};

}  // namespace search
}  // namespace lc0core
