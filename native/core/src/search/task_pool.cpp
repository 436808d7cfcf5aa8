// task_pool.cpp - see task_pool.h.
#include "task_pool.h"

#include <chrono>

namespace lc0core {
namespace search {
namespace {

// How long an idle thread polls before it sleeps: picking tasks come in
// bursts a few microseconds apart, and a futex wake-up costs about as much.
constexpr auto kSpin = std::chrono::microseconds(50);

}  // namespace

TaskPool::TaskPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { loop(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskPool::push(Task task) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleeping_ > 0;
  }
  if (wake) work_.notify_one();
}

bool TaskPool::run_one() {
  if (queued_.load(std::memory_order_acquire) == 0) return false;
  Task task;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty()) return false;
    task = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
  }
  task.fn();                          // tasks do not throw (their callers catch)
  task.group->pending_.fetch_sub(1, std::memory_order_release);
  return true;
}

void TaskPool::loop() {
  while (true) {
    if (run_one()) continue;
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    if (queued_.load(std::memory_order_acquire) > 0) continue;
    std::unique_lock<std::mutex> lock(mutex_);
    ++sleeping_;
    work_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    --sleeping_;
    if (queue_.empty()) return;       // stopping, nothing left
  }
}

void TaskPool::Group::run(std::function<void()> task) {
  if (pool_ == nullptr || pool_->threads() == 0) {
    task();
    return;
  }
  pending_.fetch_add(1, std::memory_order_relaxed);
  pool_->push({std::move(task), this});
}

void TaskPool::Group::wait() {
  // Helps with queued tasks (its own or nested ones), else yields until the
  // pool's threads have finished this group's.
  while (pending_.load(std::memory_order_acquire) > 0) {
    if (pool_ == nullptr || !pool_->run_one()) std::this_thread::yield();
  }
}

}  // namespace search
}  // namespace lc0core
