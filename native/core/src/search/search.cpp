// search.cpp - the search's top level (one thread, the pipeline, or search
// threads with a slot each) and its gathering phase (lc0's GatherMinibatch);
// picking is in picking.cpp, expanding leaves and prefetch in expansion.cpp.
#include "search.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <thread>
#include "../host.h"
#include "contempt.h"

namespace lc0core {
namespace search {
namespace {

// A seed for each search's noise: one read of the system's entropy for the
// process (reading it per search cost more than a short search's picking),
// then a splitmix64 sequence.
uint64_t next_seed() {
  static std::atomic<uint64_t> state{(uint64_t(std::random_device{}()) << 32) ^ std::random_device{}()};
  uint64_t z = state.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Search::Search(Tree* tree, PositionHistory* history, NNCache* cache, const SearchParams& params,
               const Limits& limits, const Evaluator& evaluator, std::atomic<bool>* stop,
               std::mutex* tree_mutex, RunScratch* scratch)
    : tree_(tree), history_(history), cache_(cache), params_(params), limits_(limits),
      evaluator_(evaluator), stop_(stop), tree_mutex_(tree_mutex), root_filter_(limits.searchmoves),
      rng_(next_seed()), batches_(scratch->batches), batch_(&scratch->batches[0]) {
  for (int i = 0; i < 2; ++i) batches_[i].clear();
  root_black_ = history->last().side == BLACK;
  root_ply_ = history->size();
  const double ds = params.DrawScore;
  draw_score_even_ = root_black_ ? -ds : ds;      // lc0's GetDrawScore(is_odd_depth)
  draw_score_odd_ = root_black_ ? ds : -ds;
  rescale_on_ = limits.rescale_ratio != 1.0 ||
                (limits.rescale_diff != 0.0 && limits.contempt_mode != kContemptNone);
  target_minibatch_ = std::max(1, params.MinibatchSize);
  max_out_of_order_ = std::max(1, int(params.MaxOutOfOrderEvalsFactor * target_minibatch_));
  inv_policy_temp_ = float(1.0 / params.PolicyTemperature);
  start_ = Clock::now();
  initial_visits_ = tree->node(tree->root()).n;
  remaining_time_ms_ = std::numeric_limits<double>::infinity();
  task_workers_ = params.TaskWorkers;
  if (task_workers_ < 0) {
    // lc0's heuristic, per gathering worker: cores / (Threads - 1) - 1, at most 4.
    const int cores = usable_cores();
    task_workers_ = std::max(0, std::min(4, cores / std::max(1, params.Threads - 1) - 1));
  }
  if (task_workers_ > 0) add_task_pool();
  update_current_best();
}

double Search::elapsed_ms() const {
  return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
}

double Search::nps_elapsed_ms() const {
  if (!nps_started_) return -1.0;
  return std::chrono::duration<double, std::milli>(Clock::now() - nps_start_).count();
}

bool Search::root_allowed(Move move) const {
  if (root_filter_.empty()) return true;
  return std::find(root_filter_.begin(), root_filter_.end(), move) != root_filter_.end();
}

bool Search::run_iteration() {
  std::unique_lock<std::mutex> lock(*tree_mutex_);
  gather_batch(history_, task_pool(0));
  if (!batch_->requests.empty()) ++nn_pending_;
  if (stops_midway()) {
    abandon();
    return true;
  }
  prefetch_into_batch(history_);
  lock.unlock();
  evaluate(batch_, evaluator_.slots[0]);   // the tree is readable meanwhile
  lock.lock();
  const bool stop = finish();
  lock.unlock();
  if (!stop) throttle();
  return stop;
}

void Search::run(const std::function<void()>& report) {
  if (params_.Threads < 2) {
    while (!run_iteration()) report();
    return;
  }
  if (evaluator_.slots.size() >= 2) return run_workers(report);
  // The pipeline (the reference's Engine._search_pipelined): gather batch
  // k while batch k^1 is at the network, then finish k^1.
  int current = 0, inflight = -1;
  std::future<void> inflight_done;
  while (!run_pipelined_step(&inflight, &inflight_done, &current)) report();
}

bool Search::run_pipelined_step(int* inflight, std::future<void>* inflight_done, int* current) {
  std::unique_lock<std::mutex> lock(*tree_mutex_);
  batch_ = &batches_[*current];
  gather_batch(history_, task_pool(0));
  if (!batch_->requests.empty()) ++nn_pending_;
  bool stop = stops_midway();
  std::future<void> done;
  if (!stop) prefetch_into_batch(history_);
  if (*inflight >= 0) {
    // One network call at a time: a GPU stream and its buffers serve one
    // call, so batch k goes to the network only once batch k^1 is back.
    lock.unlock();
    inflight_done->get();         // rethrows a failed network call
    lock.lock();
  }
  if (!stop) {
    Batch* batch = &batches_[*current];
    done = std::async(std::launch::async, [this, batch] { forward(batch, evaluator_.slots[0]); });
  }
  if (*inflight >= 0) {
    batch_ = &batches_[*inflight];
    // The priors of the batch that came back, once the next one is at the
    // network: the network waits for no host work between the two.
    prepare_priors(batch_);
    stop = finish() || stop;
    *inflight = -1;
    if (!stop) {
      lock.unlock();
      throttle();
      lock.lock();
    }
  }
  if (stop) {
    if (done.valid()) {
      lock.unlock();
      done.get();
      lock.lock();
    }
    batch_ = &batches_[*current];
    abandon();
    return true;
  }
  *inflight = *current;
  *inflight_done = std::move(done);
  *current ^= 1;
  return false;
}

void Search::run_workers(const std::function<void()>& report) {
  const int workers = params_.Threads;
  worker_batches_.clear();
  for (int i = 0; i < workers; ++i) worker_batches_.emplace_back(new Batch());
  slot_mutexes_.reset(new std::mutex[evaluator_.slots.size()]);
  worker_mode_ = true;
  while (task_workers_ > 0 && int(task_pools_.size()) < workers) add_task_pool();
  std::vector<std::thread> threads;
  for (int i = 1; i < workers; ++i) threads.emplace_back([this, i] { worker_loop(i, nullptr); });
  worker_loop(0, &report);       // the caller's thread reports
  for (auto& t : threads) t.join();
  if (worker_error_) std::rethrow_exception(worker_error_);
}

void Search::worker_loop(int index, const std::function<void()>* report) {
  Batch* mine = worker_batches_[index].get();
  const size_t slot = size_t(index) % evaluator_.slots.size();
  // The tree mutex alone, held except while gathering and at the network:
  // it orders the workers' bookkeeping and backups with each other and with
  // readers of results; other workers keep picking meanwhile, also while
  // it backs up (what changes the tree's shape waits for the pickers:
  // settle_deferred), and undoing a batch excludes them.
  TreeMutexLock tree_mutex(tree_mutex_, &tree_wait_ns_);
  std::unique_lock<TreeMutexLock> lock(tree_mutex);
  PositionHistory leaf_history(*history_);   // leaves are expanded unlocked: a board of its own
  auto undo_batch = [&] {
    std::lock_guard<PickLock> exclusive(pick_lock_);
    batch_ = mine;
    abandon();
    stopped_ = true;
  };
  // The first worker runs one iteration whatever the stop says, as one
  // thread does: a `stop` that comes before the first batch still gets the
  // root's evaluation (should_stop waits for a first playout too).
  for (bool first = index == 0; first || !stop_requested(); first = false) {
    if (index > 0 && one_gatherer()) {           // a small tree: worker 0 alone
      progress_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    batch_ = mine;
    gather_batch(&leaf_history, task_pool(size_t(index)));
    if (!mine->requests.empty()) ++nn_pending_;
    if (stops_midway()) {
      undo_batch();
      break;
    }
    const bool top_up = !stop_requested();     // stopped_ is read under the tree mutex
    // Everything this worker could pick is in flight elsewhere: wait for a
    // backup instead of spinning on the lock.
    const bool idle = mine->requests.empty() && mine->ooo == 0 &&
                      std::all_of(mine->visits.begin(), mine->visits.end(),
                                  [](const Visit& v) { return v.collision; });
    if (!mine->requests.empty()) {
      lock.unlock();
      if (top_up) top_up_batch(&leaf_history, mine);
      at_network_.fetch_add(1, std::memory_order_relaxed);
      try {
        std::lock_guard<std::mutex> slot_lock(slot_mutexes_[slot]);
        evaluate(mine, evaluator_.slots[slot]);
      } catch (...) {
        at_network_.fetch_sub(1, std::memory_order_relaxed);
        lock.lock();
        if (!worker_error_) worker_error_ = std::current_exception();
        undo_batch();
        progress_.notify_all();
        break;
      }
      at_network_.fetch_sub(1, std::memory_order_relaxed);
      lock.lock();
    }
    bool stop;
    {
      std::shared_lock<PickLock> beside(pick_lock_);   // backing up beside the pickers
      backing_up_shared_ = true;
      batch_ = mine;
      stop = finish();
      backing_up_shared_ = false;
    }
    progress_.notify_all();
    if (stop) break;
    if (idle) progress_.wait_for(lock, std::chrono::milliseconds(1));
    if (report || params_.NpsLimit > 0) {
      lock.unlock();
      throttle();
      if (report) (*report)();
      lock.lock();
    }
  }
  stopped_ = true;
  progress_.notify_all();
}

// ---------------------------------------------------------------- gathering

void Search::prefetch_into_batch(PositionHistory* history) {
  if (!stop_requested()) top_up_batch(history, batch_);
}

void Search::top_up_batch(PositionHistory* history, Batch* batch) {
  // lc0's PrefetchIntoCache: a batch short of MaxPrefetch requests is topped
  // up with likely next leaves (they only go to the cache). A worker does it
  // without the tree mutex, reading the tree as a picker does (the pickers'
  // lock shared), so its encoding does not hold up the others' backups.
  const int requests = int(batch->requests.size());
  if (requests == 0 || requests >= params_.MaxPrefetch) return;
  std::shared_lock<PickLock> shared(pick_lock_, std::defer_lock);
  if (worker_mode_) shared.lock();
  int spent = 0;
  PickContext c{history, batch, INT_MAX, 0, nullptr};
  prefetch(c, tree_->root(), params_.MaxPrefetch - requests, false, true, &spent);
}

int Search::collisions_left(long long nodes) const {
  const auto& p = params_;
  if (nodes >= p.MaxCollisionVisitsScalingEnd) return p.MaxCollisionVisits;
  if (nodes <= p.MaxCollisionVisitsScalingStart) return 1;
  const double ratio = std::pow(double(nodes - p.MaxCollisionVisitsScalingStart) /
                                    double(p.MaxCollisionVisitsScalingEnd - p.MaxCollisionVisitsScalingStart),
                                p.MaxCollisionVisitsScalingPower);
  return int(std::floor(1 + (p.MaxCollisionVisits - 1) * ratio + 0.5));
}

void Search::gather_batch(PositionHistory* leaf_history, TaskWorkers* tasks) {
  const auto started = Clock::now();
  Batch* batch = batch_;
  gather_into_batch(leaf_history, tasks);
  batch_ = batch;                     // other workers may have gathered meanwhile
  gather_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
}

void Search::gather_into_batch(PositionHistory* leaf_history, TaskWorkers* tasks) {
  Batch* const batch = batch_;
  batch->clear();
  GatherTimes times;
  if (worker_mode_) {
    // Workers gather with the tree unlocked (several dozen picks a batch):
    // picking and the collisions' visits in flight under the pickers' lock
    // shared, expanding with no lock, the tree mutex taken only after a
    // pick that needs it: to back up visits evaluated out of order (as lc0
    // does; beside the pickers, as a batch's backup) or, with the pickers'
    // lock exclusive, to undo a two-fold draw.
    TreeMutexLock tree_mutex(tree_mutex_, &tree_wait_ns_);
    Unlocked<TreeMutexLock> unlocked(&tree_mutex);
    gather_picks(batch, leaf_history, tasks, &times);
  } else {
    gather_picks(batch, leaf_history, tasks, &times);
  }
  batch_ = batch;                     // other workers may have gathered meanwhile
  expand_seconds_ += times.expand;
  pick_shared_seconds_ += times.shared;
}

void Search::gather_picks(Batch* batch, PositionHistory* leaf_history, TaskWorkers* tasks, GatherTimes* times) {
  Tree& tree = *tree_;
  // A worker reads what backing up writes (visits, the best move, playouts
  // left) holding the pickers' lock shared; alone, no lock.
  std::shared_lock<PickLock> shared(pick_lock_, std::defer_lock);
  if (worker_mode_) shared.lock();
  int minibatch_size = 0;
  int left = collisions_left((long long)std::min(double(visits_of(tree.node(tree.root()))),
                                                 std::max(1.0, playouts_left())));
  const int gathering = worker_mode_ ? gathering_threads() : 1;
  const int idle_threshold = params_.idle_threshold(gathering);
  const bool strict_nodes = params_.StrictNodes && limits_.nodes >= 0;
  if (worker_mode_) shared.unlock();
  int& ooo = batch->ooo;
  auto& visits = batch->visits;
  while (minibatch_size < target_minibatch_ && ooo < max_out_of_order_) {
    if (minibatch_size > 0 && batch->requests.empty()) return;   // back up without the network now
    // Workers: an idle network gets what there is now.
    if (worker_mode_ && minibatch_size > 0 &&
        int(batch->requests.size()) > params_.IdlingMinimumWork &&
        gathering - at_network_.load(std::memory_order_relaxed) > idle_threshold) {
      idle_ends_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const size_t new_start = visits.size();
    int limit = std::min(left, std::min(target_minibatch_ - minibatch_size, max_out_of_order_ - ooo));
    const auto pick_started = Clock::now();
    if (worker_mode_) shared.lock();
    if (strict_nodes) {
      // No visit past the node limit; threads gathering at once take a share
      // each of what is left. At the limit (batches in flight hold the rest)
      // a gathering ends, empty or not: a worker then waits for a backup.
      const long long to_limit = node_limit_left();
      if (to_limit <= 0) return;
      limit = int(std::min<long long>(limit, std::max<long long>(1, to_limit / gathering)));
    }
    pick(batch, root_filter(batch), limit, tasks, worker_mode_);
    if (worker_mode_) {
      shared.unlock();
      times->shared += std::chrono::duration<double>(Clock::now() - pick_started).count();
    }
    const auto expand_started = Clock::now();
    expand_leaves(batch, new_start, leaf_history, tasks);
    times->expand += std::chrono::duration<double>(Clock::now() - expand_started).count();
    if (worker_mode_ && two_folds_pending()) {
      std::lock_guard<TreeWriteLock> exclusive(write_lock_);
      fix_two_folds();
    }
    bool any_ooo = false, any_collision = false;
    for (size_t i = new_start; i < visits.size(); ++i) {
      if (!visits[i].collision) ++minibatch_size;
      any_ooo = any_ooo || visits[i].ooo_done;
      any_collision = any_collision || visits[i].collision;
    }
    // Back up out-of-order results now (a worker as it backs a batch up:
    // the tree mutex held, beside the pickers) and drop this pick's
    // collisions. Threads gathering side by side do it only when the mutex
    // is free: else the results stay in the batch and are backed up with it
    // (as with OutOfOrderEval off), and the thread picks on instead of
    // waiting behind the others' backups.
    TreeMutexLock tree_mutex(tree_mutex_, &tree_wait_ns_);
    std::unique_lock<TreeMutexLock> backing(tree_mutex, std::defer_lock);
    if (any_ooo && worker_mode_) {
      if (gathering == 1) {
        backing.lock();               // a lone gatherer grows Threads 1's tree
      } else if (!backing.try_lock()) {
        any_ooo = false;
        ooo_left_in_batch_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (any_ooo) {
      std::shared_lock<PickLock> beside(pick_lock_, std::defer_lock);
      if (worker_mode_) {
        beside.lock();
        backing_up_shared_ = true;
      }
      size_t kept = new_start;
      for (size_t i = new_start; i < visits.size(); ++i) {
        const Visit v = visits[i];
        if (v.collision) {
          cancel_in_flight(v.node, v.multivisit);
        } else if (v.ooo_done) {
          backup(v);
          --minibatch_size;
          ++ooo;
        } else {
          visits[kept++] = v;
        }
      }
      visits.resize(kept);
      if (worker_mode_) {
        settle_deferred();
        backing_up_shared_ = false;
      }
    }
    if (any_ooo || !any_collision) continue;          // no collisions kept: nothing to count
    if (worker_mode_) shared.lock();
    for (size_t i = new_start; i < visits.size(); ++i) {
      Visit& v = visits[i];
      if (!v.collision) continue;
      if (v.maxvisit > 0 && left > v.multivisit) {
        const int extra = std::min(v.maxvisit, left) - v.multivisit;
        v.multivisit += extra;
        for (uint32_t n = tree.node(v.node).parent; n != kNone; n = tree.node(n).parent) {
          add_in_flight(tree.node(n), extra);
        }
      }
      left -= v.multivisit;
      if (left <= 0) {
        collision_ends_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if (stop_->load(std::memory_order_relaxed)) return;
    }
    if (worker_mode_) shared.unlock();
  }
}

int Search::append_requests(Batch* to, const Batch& from) {
  const int request_base = int(to->requests.size()), move_base = int(to->moves.size());
  for (Request r : from.requests) {
    r.first_move += move_base;
    to->requests.push_back(r);
  }
  to->moves.insert(to->moves.end(), from.moves.begin(), from.moves.end());
  to->indices.insert(to->indices.end(), from.indices.begin(), from.indices.end());
  to->masks.insert(to->masks.end(), from.masks.begin(), from.masks.end());
  to->values.insert(to->values.end(), from.values.begin(), from.values.end());
  return request_base;
}

std::unique_ptr<Batch> Search::spare_batch() {
  std::lock_guard<std::mutex> lock(spare_mutex_);
  if (spare_batches_.empty()) return std::unique_ptr<Batch>(new Batch());
  std::unique_ptr<Batch> b = std::move(spare_batches_.back());
  spare_batches_.pop_back();
  return b;
}

void Search::return_batch(std::unique_ptr<Batch> batch) {
  batch->clear();
  std::lock_guard<std::mutex> lock(spare_mutex_);
  spare_batches_.push_back(std::move(batch));
}

void Search::ensure_two_fold_correct(uint32_t child, int depth) {
  // Undoes the draw's visits and makes it searchable again.
  Tree& tree = *tree_;
  std::lock_guard<std::mutex> lock(fix_mutex_);     // ancestors are shared between tasks
  if (!needs_two_fold_fix(child, depth)) return;    // another task fixed it first
  const Node& cn = tree.node(child);
  const double wl = cn.wl, d = cn.d, m = cn.m;
  const uint32_t visits = cn.n;
  int counter = 0;
  for (uint32_t node = child; node != kNone; node = tree.node(node).parent) {
    tree.revert_terminal_visits(node, wl, d, m + counter, visits);
    ++counter;
    if (counter > depth) break;
  }
  tree.make_not_terminal(child);
  initial_visits_ -= visits;
  ++two_fold_fixes_;
}

bool Search::two_folds_pending() const {
  // Asked after every pick by every search thread: a flag they only read
  // (the list and its mutex are written once in a long while).
  return fixes_pending_.load(std::memory_order_acquire);
}

void Search::fix_two_folds() {
  std::vector<std::pair<uint32_t, int>> fixes;
  {
    std::lock_guard<std::mutex> lock(fix_mutex_);
    fixes.swap(pending_fixes_);
    fixes_pending_.store(false, std::memory_order_relaxed);
  }
  for (const auto& fix : fixes) {
    if (being_expanded(fix.first)) continue;       // as pick_node: never a leaf in flight
    const long long before = two_fold_fixes_;
    ensure_two_fold_correct(fix.first, fix.second);
    deferred_fixes_ += two_fold_fixes_ - before;
  }
}

}  // namespace search
}  // namespace lc0core
