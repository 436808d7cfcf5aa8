// task_pool.h - a few threads that run the search's picking tasks (lc0's
// task workers), and the demux's parts (demux_forward.cpp). The core has no
// third-party dependencies (C++17 has no pool of its own), hence this small
// one. Picking tasks last microseconds, so idle threads spin a little before
// sleeping, and a waiting caller runs queued tasks itself (tasks may spawn
// tasks without deadlock).
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lc0core {
namespace search {

class TaskPool {
 public:
  // A set of tasks one caller waits for together.
  class Group {
   public:
    explicit Group(TaskPool* pool) : pool_(pool) {}
    ~Group() { wait(); }
    // Queued for a pool thread (run here instead when the pool has none).
    void run(std::function<void()> task);
    // Until every task of the group has run, running queued tasks meanwhile.
    void wait();

   private:
    friend class TaskPool;
    TaskPool* pool_;
    std::atomic<int> pending_{0};
  };

  explicit TaskPool(int threads);
  ~TaskPool();
  int threads() const { return int(threads_.size()); }

 private:
  struct Task {
    std::function<void()> fn;
    Group* group;
  };
  void loop();
  bool run_one();                     // a queued task, if any; true when one ran
  void push(Task task);

  std::mutex mutex_;
  std::condition_variable work_;      // a task was queued, or stopping
  std::deque<Task> queue_;            // guarded by mutex_
  std::atomic<int> queued_{0};        // queue_.size(), readable without the lock
  int sleeping_ = 0;                  // guarded by mutex_
  bool stopping_ = false;             // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace search
}  // namespace lc0core
