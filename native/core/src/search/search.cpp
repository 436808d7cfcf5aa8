// search.cpp - the search's top level and its gathering phase (lc0's
// GatherMinibatch, PickNodesToExtend, ExtendNode, PrefetchIntoCache).
#include "search.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include "contempt.h"
#include "../pychess_bridge.h"   // python-chess's move order: equal priors keep it, as the reference search does

namespace lc0core {
namespace search {
namespace {

constexpr double kLowest = -3.4028234663852886e38;
// pick_node's mark of a utility not yet set: below any real one.
constexpr double kNoUtil = -1e300;

inline Move move_of(uint16_t raw) {
  Move m;
  m.raw = raw;
  return m;
}

int popcount(Bitboard b) { return __builtin_popcountll(b); }

}  // namespace

Search::Search(Tree* tree, PositionHistory* history, NNCache* cache, const SearchParams& params,
               const Limits& limits, const Evaluator& evaluator, std::atomic<bool>* stop,
               std::mutex* tree_mutex)
    : tree_(tree), history_(history), cache_(cache), params_(params), limits_(limits),
      evaluator_(evaluator), stop_(stop), tree_mutex_(tree_mutex), root_filter_(limits.searchmoves),
      rng_(std::random_device{}()) {
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
    const int cores = int(std::thread::hardware_concurrency());
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
  prefetch_into_batch();
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
  if (!stop) prefetch_into_batch();
  if (*inflight >= 0) {
    // One network call at a time: a GPU stream and its buffers serve one
    // call, so batch k goes to the network only once batch k^1 is back.
    lock.unlock();
    inflight_done->get();         // rethrows a failed network call
    lock.lock();
  }
  if (!stop) {
    Batch* batch = &batches_[*current];
    done = std::async(std::launch::async, [this, batch] { evaluate(batch, evaluator_.slots[0]); });
  }
  if (*inflight >= 0) {
    batch_ = &batches_[*inflight];
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
  std::unique_lock<std::mutex> lock(*tree_mutex_);
  PositionHistory leaf_history(*history_);   // leaves are expanded unlocked: a board of its own
  while (!stop_requested()) {
    batch_ = mine;
    gather_batch(&leaf_history, task_pool(size_t(index)));
    if (!mine->requests.empty()) ++nn_pending_;
    if (stops_midway()) {
      batch_ = mine;
      abandon();
      stopped_ = true;
      break;
    }
    prefetch_into_batch();
    // Everything this worker could pick is in flight elsewhere: wait for a
    // backup instead of spinning on the lock.
    const bool idle = mine->requests.empty() && mine->ooo == 0 &&
                      std::all_of(mine->visits.begin(), mine->visits.end(),
                                  [](const Visit& v) { return v.collision; });
    if (!mine->requests.empty()) {
      lock.unlock();
      at_network_.fetch_add(1, std::memory_order_relaxed);
      try {
        std::lock_guard<std::mutex> slot_lock(slot_mutexes_[slot]);
        evaluate(mine, evaluator_.slots[slot]);
      } catch (...) {
        at_network_.fetch_sub(1, std::memory_order_relaxed);
        lock.lock();
        if (!worker_error_) worker_error_ = std::current_exception();
        batch_ = mine;
        abandon();
        stopped_ = true;
        progress_.notify_all();
        break;
      }
      at_network_.fetch_sub(1, std::memory_order_relaxed);
      lock.lock();
    }
    batch_ = mine;
    const bool stop = finish();
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

void Search::prefetch_into_batch() {
  // lc0's PrefetchIntoCache: a batch short of MaxPrefetch requests is topped
  // up with likely next leaves (they only go to the cache).
  const int requests = int(batch_->requests.size());
  if (requests == 0 || requests >= params_.MaxPrefetch || stop_requested()) return;
  int spent = 0;
  PickContext c{history_, batch_, INT_MAX, 0, nullptr};
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
  Tree& tree = *tree_;
  int minibatch_size = 0;
  const double remaining = std::max(1.0, remaining_playouts_);
  int left = collisions_left((long long)std::min(double(tree.node(tree.root()).n), remaining));
  int& ooo = batch->ooo;
  auto& visits = batch->visits;
  while (minibatch_size < target_minibatch_ && ooo < max_out_of_order_) {
    if (minibatch_size > 0 && batch->requests.empty()) return;   // back up without the network now
    // Workers: an idle network gets what there is now.
    if (worker_mode_ && minibatch_size > 0 &&
        int(batch->requests.size()) > params_.IdlingMinimumWork &&
        params_.Threads - at_network_.load(std::memory_order_relaxed) > params_.ThreadIdlingThreshold) {
      return;
    }
    const size_t new_start = visits.size();
    pick(std::min(left, std::min(target_minibatch_ - minibatch_size, max_out_of_order_ - ooo)), tasks);
    const auto expand_started = Clock::now();
    expand_leaves(batch, new_start, leaf_history, tasks);
    batch_ = batch;
    expand_seconds_ += std::chrono::duration<double>(Clock::now() - expand_started).count();
    bool any_ooo = false;
    for (size_t i = new_start; i < visits.size(); ++i) {
      if (!visits[i].collision) ++minibatch_size;
      any_ooo = any_ooo || visits[i].ooo_done;
    }
    if (any_ooo) {
      // Back up out-of-order results now; drop this pick's collisions.
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
    }
    for (size_t i = new_start; i < visits.size(); ++i) {
      Visit& v = visits[i];
      if (!v.collision) continue;
      if (v.maxvisit > 0 && left > v.multivisit) {
        const int extra = std::min(v.maxvisit, left) - v.multivisit;
        v.multivisit += extra;
        for (uint32_t n = tree.node(v.node).parent; n != kNone; n = tree.node(n).parent) {
          tree.node(n).n_in_flight += extra;
        }
      }
      left -= v.multivisit;
      if (left <= 0) return;
      if (stop_->load(std::memory_order_relaxed)) return;
    }
  }
}

void Search::pick(int limit, TaskWorkers* tasks) {
  PickContext c{nullptr, batch_, INT_MAX, limit, tasks};   // picking needs no board
  root_allowed_on_ = !root_filter_.empty() || current_best_ != kNone;
  if (!root_allowed_on_) return pick_node(c, tree_->root(), limit, 1, true);
  // With few playouts left, only root edges that could still catch the best
  // (lc0's root pruning), and only `searchmoves` when given.
  Tree& tree = *tree_;
  const uint32_t root = tree.root();
  double best_n = 0;
  if (current_best_ != kNone) {
    const uint32_t best = tree.find_child(root, int(current_best_ - tree.node(root).edges));
    best_n = best != kNone ? tree.node(best).n : 0;
  }
  const double remaining = std::max(1.0, remaining_playouts_);
  root_allowed_.clear();
  bool any_excluded = false;
  for (EdgeWalk w(tree, root); w.valid(); w.next()) {
    const double n = w.child() != kNone ? tree.node(w.child()).n : 0;
    bool ok = w.edge_id() == current_best_ || !(remaining < best_n - n);
    if (ok && !root_filter_.empty() && !root_allowed(move_of(tree.edge(w.edge_id()).move))) ok = false;
    root_allowed_.push_back(ok);
    any_excluded = any_excluded || !ok;
  }
  // Every edge allowed (the usual case): the root's selection needs no filter.
  root_allowed_on_ = any_excluded;
  pick_node(c, root, limit, 1, true);
}

double Search::fpu(uint32_t node, bool is_root, double draw_score, double visited_pol) const {
  bool absolute;
  double value;
  params_.fpu(is_root, &absolute, &value);
  if (absolute) return value;
  const Node& n = tree_->node(node);
  return -(n.wl - draw_score * n.d) - value * std::sqrt(visited_pol);
}

double Search::cpuct(uint32_t n, bool is_root) const {
  double init, base, factor;
  params_.cpuct(is_root, &init, &base, &factor);
  return init + (factor != 0.0 ? factor * fast_log((n + base) / base) : 0.0);
}

bool Search::try_start(uint32_t node) {
  Node& n = tree_->node(node);
  if (n.n == 0 && n.n_in_flight > 0) return false;
  ++n.n_in_flight;
  return true;
}

void Search::pick_node(PickContext& c, uint32_t node, int limit, int depth, bool is_root) {
  Tree& tree = *tree_;
  {
    Node& n = tree.node(node);
    if (n.n == 0 || n.terminal) {
      if (is_root && try_start(node)) {
        --limit;
        visit(c, node, depth);
      }
      if (limit > 0) {
        Visit v;
        v.node = node, v.depth = depth, v.collision = true, v.multivisit = limit;
        v.maxvisit = (limit == c.pick_limit && c.max_limit > limit) ? c.max_limit : 0;
        c.out->visits.push_back(v);
      }
      return;
    }
    if (is_root) n.n_in_flight += limit;
  }
  const Node& nd = tree.node(node);
  const uint32_t first = nd.edges;
  const int num_edges = nd.num_edges;
  int max_needed = num_edges;
  if (!(is_root && !root_filter_.empty())) {
    max_needed = int(std::min<long long>(num_edges, (long long)nd.n + nd.n_in_flight + limit + 2));
  }
  const double draw_score = depth % 2 == 0 ? draw_score_odd_ : draw_score_even_;

  PickEdge e[kMaxMoves];               // [0, ready) set up; the rest untouched
  double score[kMaxMoves];             // likewise
  double visited_pol = 0.0;
  // lc0's MEvaluator: prefer shorter wins and longer losses.
  const bool m_on = evaluator_.has_moves_left && std::fabs(nd.wl) > params_.MovesLeftThreshold;
  const double parent_m = nd.m;
  // Entries [0, ready) are filled; edges past the last child are unvisited
  // and, sorted by prior, looked at only as far as the selection reaches
  // (a sharp policy leaves most of them untouched).
  int ready = 0;
  auto open = [&](int upto) {
    for (; ready < upto; ++ready) {
      PickEdge& x = e[ready];
      x.pol = tree.prior(first + ready);
      x.util = kNoUtil, x.nstarted = 0, x.kid = kNone, x.to_perform = 0;
    }
  };
  for (uint32_t ch = nd.first_child; ch != kNone; ch = tree.node(ch).next_sibling) {
    const Node& cn = tree.node(ch);
    const int k = cn.edge_index;
    if (k < max_needed) {
      open(k + 1);
      e[k].nstarted = (long long)cn.n + cn.n_in_flight, e[k].kid = ch;
    }
    if (cn.n > 0) {
      visited_pol += tree.prior(first + k);
      if (k < max_needed) {
        double q = cn.wl + draw_score * cn.d;
        double u = q;
        if (m_on) {
          const auto& p = params_;
          double m = std::min(std::max(p.MovesLeftSlope * (cn.m - parent_m), -p.MovesLeftMaxEffect),
                              p.MovesLeftMaxEffect);
          m *= std::copysign(1.0, -q);
          if (0.0 < p.MovesLeftThreshold && p.MovesLeftThreshold < 1.0) {
            q = std::max(0.0, std::fabs(q) - p.MovesLeftThreshold) / (1.0 - p.MovesLeftThreshold);
          }
          u += m * (p.MovesLeftConstantFactor + p.MovesLeftScaledFactor * std::fabs(q) +
                    p.MovesLeftQuadraticFactor * q * q);
        }
        e[k].util = u;
      }
    }
  }
  const double fpu_value = fpu(node, is_root, draw_score, visited_pol);
  const double puct_mult = cpuct(nd.n, is_root) * std::sqrt(double(std::max<uint32_t>(nd.n, 2) - 1));
  // x / 1 == x exactly, so unstarted edges skip the division.
  for (int k = 0; k < ready; ++k) {
    PickEdge& x = e[k];
    if (x.util == kNoUtil) x.util = fpu_value;
    score[k] = x.nstarted == 0 ? x.pol * puct_mult + x.util
                              : x.pol * puct_mult / (1 + x.nstarted) + x.util;
  }
  auto extend = [&](int upto) {       // unvisited edges, on demand
    const int from = ready;
    open(upto);
    for (int k = from; k < ready; ++k) e[k].util = fpu_value, score[k] = e[k].pol * puct_mult + fpu_value;
  };
  const char* allowed = is_root && root_allowed_on_ ? root_allowed_.data() : nullptr;

  // The scan looks at edges up to the first unstarted one and one more: they
  // are sorted by prior, so no later edge can beat those two. Without a root
  // filter that end is known before the scan: `unstarted` is the first edge
  // with nothing started (entries past `ready` have nothing started), and it
  // only moves forward, as nstarted only grows.
  //
  // The scan keeps the top three scores: best (the first edge at the
  // highest score), second and third (values; second's edge too). A round
  // changes one score only, the picked edge's (fpu, puct_mult and the other
  // edges' entries are fixed for this call), so without a root filter the
  // next round's result is often known without a rescan (see the end of
  // the loop), and a range that grew needs only its new edges scanned.
  // Invariant: score[best_idx] == best, score[second_idx] == second, every
  // other scanned score is at most third (or ignored: NaN, <= kLowest).
  int unstarted = 0, end = 0;
  bool advance = true;                // e[unstarted] may have been started
  double best = kLowest, second = kLowest, third = kLowest;
  int best_idx = -1, second_idx = -1;
  int scanned = 0;                    // scores [0, scanned) are in the state above
  auto consider = [&](int idx) {
    const double s = score[idx];
    if (s > third) {                  // most edges fail this one test
      if (s > second) {
        third = second;
        if (s > best) {               // `>`: on equal scores the first edge stays best
          second = best, second_idx = best_idx;
          best = s, best_idx = idx;
        } else {
          second = s, second_idx = idx;
        }
      } else {
        third = s;
      }
    }
  };
  auto restart_scan = [&] {
    best = second = third = kLowest;
    best_idx = second_idx = -1;
  };
  while (limit > 0) {
    if (!allowed) {
      if (advance) {
        while (unstarted < ready && e[unstarted].nstarted != 0) ++unstarted;
        end = std::min(max_needed, unstarted + 2);
        if (end > ready) extend(end);
        advance = false;
      }
      if (scanned == 0) restart_scan();
      for (int idx = scanned; idx < end; ++idx) consider(idx);
      scanned = end;
    } else {
      restart_scan();                 // the filtered scan finds its own end: always a full one
      bool can_exit = false;
      for (int idx = 0; idx < max_needed; ++idx) {
        if (!allowed[idx]) continue;
        if (idx >= ready) extend(idx + 1);
        consider(idx);
        if (can_exit) break;
        if (e[idx].nstarted == 0) can_exit = true;    // sorted by prior: one more suffices
      }
    }
    if (best_idx < 0) break;
    PickEdge& b = e[best_idx];
    // second only ever takes values above kLowest, so "a second edge was
    // seen" is second > kLowest.
    const bool have_second = second > kLowest;
    const double best_without_u = b.util;
    int new_visits = limit;
    if (have_second) {
      long long estimated = INT_MAX;
      if (best_without_u < second) {
        const double n1 = double(b.nstarted + 1);
        estimated = (long long)std::max(
            1.0, std::min(b.pol * puct_mult / (second - best_without_u) - n1 + 1, 1e9));
      }
      if (estimated < c.max_limit) c.max_limit = int(estimated);
      new_visits = int(std::min<long long>(limit, estimated));
    }
    b.to_perform += new_visits;
    limit -= new_visits;
    if (b.kid == kNone) b.kid = tree.child(node, best_idx);
    const uint32_t child = b.kid;
    if (!being_expanded(child) && tree.node(child).terminal == kTwoFold) {
      ensure_two_fold_correct(child, depth);
    }
    if (!try_start(child)) {
      // A failed start changes nothing the rounds read (try_start fails
      // without side effects, on a child being expanded, so no two-fold fix
      // either): every later round would pick this edge again with the same
      // estimate until the limit is spent. Give it the rest at once.
      b.to_perform += limit;
      limit = 0;
      break;
    }
    ++b.nstarted;
    --new_visits;
    Node& cn = tree.node(child);
    if (cn.n > 0 && !cn.terminal) {
      cn.n_in_flight += new_visits;
      b.nstarted += new_visits;
    }
    const double nb = b.pol * puct_mult / (1 + b.nstarted) + b.util;
    score[best_idx] = nb;
    if (cn.n == 0 || cn.terminal) {
      --b.to_perform;
      visit(c, child, depth + 1);
    }
    // The next round without a rescan. Only score[best_idx] changed (to nb),
    // and of the range's end only `unstarted` could move, and only if this
    // edge was it. Every other scanned score is at most second (the one at
    // second_idx) or at most third, so:
    // - nb > second: this edge is still the only one at the top;
    // - third < nb <= second: the two top edges are these two, the first at
    //   the higher score leading, the first index on a tie; third stays;
    // - otherwise: rescan.
    if (best_idx == unstarted) advance = true;
    if (nb > second) {
      best = nb;
    } else if (nb > third) {
      if (nb == second && best_idx < second_idx) {
        best = nb;                    // a tie, and this edge comes first: it stays best
      } else {
        best = second, second = nb;
        std::swap(best_idx, second_idx);
      }
    } else {
      scanned = 0;
    }
  }
  pick_children(c, depth, e, ready);
}

void Search::pick_children(PickContext& c, int depth, const PickEdge* e, int count) {
  Tree& tree = *tree_;
  // lc0's rule: a branch with more than MinimumPickingWork visits goes to a
  // task worker when MinimumRemainingPickingWork are left for those after it
  // (and it has a subtree to search: not a collision at an unvisited node).
  bool task[kMaxMoves];
  bool any_task = false;
  if (c.tasks) {
    int remaining = 0;
    for (int idx = 0; idx < count; ++idx) remaining += std::max(0, e[idx].to_perform);
    for (int idx = 0; idx < count; ++idx) {
      const int k = std::max(0, e[idx].to_perform);
      remaining -= k;
      // k > MinimumPickingWork >= 1: the child exists (kid is set).
      task[idx] = k > params_.MinimumPickingWork && remaining >= params_.MinimumRemainingPickingWork &&
                  tree.node(e[idx].kid).n > 0 && !tree.node(e[idx].kid).terminal;
      any_task = any_task || task[idx];
    }
  }
  if (!any_task) {
    for (int idx = 0; idx < count; ++idx) {
      if (e[idx].to_perform > 0) pick_node(c, e[idx].kid, e[idx].to_perform, depth + 1, false);
    }
    return;
  }
  // Branches picked apart, the big ones by task workers, the rest here;
  // every branch writes its own visits, appended in edge order so the result
  // is what one thread would produce. (Picking only records leaves: their
  // boards are set up when they are expanded, after the pick.)
  struct Branch {
    int idx;
    bool task;
    std::unique_ptr<Batch> out;
    int max_limit;
    std::exception_ptr error;
  };
  std::vector<Branch> branches;
  for (int idx = 0; idx < count; ++idx) {
    if (e[idx].to_perform > 0) branches.push_back(Branch{idx, task[idx], spare_batch(), c.max_limit, nullptr});
  }
  {
    TaskPool::Group group(&c.tasks->pool);
    auto pick_branch = [this, &c, e, depth](Branch* branch) {
      try {
        PickContext sub{c.history, branch->out.get(), branch->max_limit, c.pick_limit, c.tasks};
        pick_node(sub, e[branch->idx].kid, e[branch->idx].to_perform, depth + 1, false);
        branch->max_limit = sub.max_limit;
      } catch (...) {
        branch->error = std::current_exception();
      }
    };
    for (Branch& b : branches) {
      if (!b.task) continue;
      picking_tasks_.fetch_add(1, std::memory_order_relaxed);
      Branch* branch = &b;
      group.run([&pick_branch, branch] { pick_branch(branch); });
    }
    for (Branch& b : branches) {
      if (!b.task) pick_branch(&b);
    }
  }                                   // the group waits for its tasks here
  for (Branch& b : branches) {
    if (b.error) std::rethrow_exception(b.error);
  }
  Batch& to = *c.out;
  for (Branch& b : branches) {
    const int request_base = append_requests(&to, *b.out);
    for (Visit v : b.out->visits) {
      if (v.nn_slot >= 0) v.nn_slot += request_base;
      to.visits.push_back(v);
    }
    c.max_limit = std::min(c.max_limit, b.max_limit);
    return_batch(std::move(b.out));
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
  // A two-fold draw whose first occurrence lies before the (new) root is no
  // draw now: undo its visits and make it searchable again.
  Tree& tree = *tree_;
  const Node& cn = tree.node(child);
  if (!(cn.terminal == kTwoFold && depth < cn.m)) return;
  std::lock_guard<std::mutex> lock(fix_mutex_);     // ancestors are shared between tasks
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
}

// ------------------------------------------------------------------ leaves

void Search::visit(PickContext& c, uint32_t node, int depth) {
  Visit v;
  v.node = node, v.depth = depth;
  const Node& n = tree_->node(node);
  if (n.terminal || n.n > 0) {
    v.q = n.wl, v.d = n.d, v.m = n.m;
    v.ooo_done = params_.OutOfOrderEval;
  } else {
    v.expand = true;                 // expanded after the pick (expand_leaves)
  }
  c.out->visits.push_back(v);
}

// --------------------------------------------------------------- expanding

bool Search::being_expanded(uint32_t node) const {
  const Node& n = tree_->node(node);
  return n.n == 0 && n.n_in_flight > 0;
}

void Search::expand_leaves(Batch* batch, size_t from, PositionHistory* history, TaskWorkers* tasks) {
  // lc0's ProcessPickedTask: the picked leaves get their boards, moves,
  // terminal checks, cache lookups and network inputs here, with the tree
  // unlocked in worker mode (a leaf in flight is its picker's alone; others
  // see a collision there), split over the task workers when there are
  // enough of them. Requests keep the visits' order.
  std::vector<size_t>& leaves = batch->leaves;
  leaves.clear();
  for (size_t i = from; i < batch->visits.size(); ++i) {
    if (batch->visits[i].expand) leaves.push_back(i);
  }
  if (leaves.empty()) return;
  std::unique_ptr<TreeUnlocked> unlocked;
  if (worker_mode_) unlocked.reset(new TreeUnlocked(tree_mutex_));
  const int count = int(leaves.size());
  if (!tasks || count < params_.MinimumProcessingWork) {
    expand_range(batch, leaves.data(), count, batch, history);
    return;
  }
  // lc0's split: at least two parts of MinimumPerTaskProcessing leaves or
  // more, one per task worker and one here (which takes the leftovers).
  const int parts = std::max(2, std::min(count / std::max(1, params_.MinimumPerTaskProcessing),
                                         tasks->pool.threads() + 1));
  const int per_part = count / parts;
  struct Part {
    int begin, end;
    std::unique_ptr<Batch> out;
    PositionHistory* history;
    std::exception_ptr error;
  };
  std::vector<Part> work;
  for (int p = 0; p < parts; ++p) {
    const int begin = p * per_part, end = p + 1 == parts ? count : begin + per_part;
    work.push_back(Part{begin, end, spare_batch(), nullptr, nullptr});
  }
  {
    TaskPool::Group group(&tasks->pool);
    for (size_t p = 0; p + 1 < work.size(); ++p) {
      Part* part = &work[p];
      part->history = tasks->boards[p].get();
      expanding_tasks_.fetch_add(1, std::memory_order_relaxed);
      group.run([this, part, batch, &leaves] {
        try {
          expand_range(batch, leaves.data() + part->begin, part->end - part->begin, part->out.get(),
                       part->history);
        } catch (...) {
          part->error = std::current_exception();
        }
      });
    }
    Part& last = work.back();
    try {
      expand_range(batch, leaves.data() + last.begin, last.end - last.begin, last.out.get(), history);
    } catch (...) {
      last.error = std::current_exception();
    }
  }                                   // the group waits for its tasks here
  for (Part& part : work) {
    if (part.error) std::rethrow_exception(part.error);
  }
  for (Part& part : work) {
    const int request_base = append_requests(batch, *part.out);
    for (int i = part.begin; i < part.end; ++i) {
      Visit& v = batch->visits[leaves[i]];
      if (v.nn_slot >= 0) v.nn_slot += request_base;
    }
    return_batch(std::move(part.out));
  }
}

void Search::expand_range(Batch* batch, const size_t* leaves, int count, Batch* out,
                          PositionHistory* history) {
  // `history` is at the root on entry and exit; in between it follows the
  // leaves, which come in tree order, so consecutive ones share most moves.
  // The moves `history` is at, from the root, and the next leaf's: a
  // thread's own, kept between calls to spare allocations.
  thread_local std::vector<uint16_t> at, path;
  at.clear();
  PickContext c{history, out, INT_MAX, 0, nullptr};
  for (int i = 0; i < count; ++i) {
    Visit& v = batch->visits[leaves[i]];
    moves_from_root(v.node, &path);
    size_t common = 0;
    while (common < at.size() && common < path.size() && at[common] == path[common]) ++common;
    for (size_t k = at.size(); k > common; --k) history->pop();
    for (size_t k = common; k < path.size(); ++k) history->push(move_of(path[k]));
    at.swap(path);
    expand_leaf(c, &v);
  }
  for (size_t k = 0; k < at.size(); ++k) history->pop();
}

void Search::moves_from_root(uint32_t node, std::vector<uint16_t>* path) const {
  const Tree& tree = *tree_;
  path->clear();
  for (uint32_t n = node; n != tree.root(); n = tree.node(n).parent) {
    path->push_back(tree.edge(tree.own_edge(n)).move);
  }
  std::reverse(path->begin(), path->end());
}

void Search::expand_leaf(PickContext& c, Visit* v) {
  Tree& tree = *tree_;
  const uint32_t node = v->node;
  v->expand = false;
  const Position& pos = c.history->last();
  const uint64_t key = NNCache::key(pos, c.history->repetitions(c.history->size() - 1));
  CacheHit cached;
  const bool hit = cache_->lookup(key, &cached);
  MoveList moves;
  if (hit) {
    moves.count = cached.count;
    for (int i = 0; i < cached.count; ++i) moves.moves[i].raw = uint16_t(cached.edges[i] & 0xFFFF);
  } else {
    legal_moves(pos, &moves);
    order_like_python_chess(pos, &moves);
  }
  if (!extend_terminal(c, node, v->depth, moves)) {
    tree.create_edges(node, moves.moves, moves.count);
    if (hit) {
      set_priors_from_cache(node, cached);
      v->q = -cached.q, v->d = cached.d, v->m = cached.m;
      if (rescale_on_) rescale(v);
      v->ooo_done = params_.OutOfOrderEval;
      return;
    }
    v->nn_slot = int(c.out->requests.size());
    add_request(c, node, key, moves);
    return;
  }
  const Node& n = tree.node(node);
  v->q = n.wl, v->d = n.d, v->m = n.m;
  v->ooo_done = params_.OutOfOrderEval;
}

bool Search::extend_terminal(PickContext& c, uint32_t node, int depth, const MoveList& moves) {
  Tree& tree = *tree_;
  const Position& pos = c.history->last();
  if (moves.count == 0) {
    tree.make_terminal(node, in_check(pos) ? kWin : kDraw);
    return true;
  }
  if (node == tree.root()) return false;    // draws by rule are what the root search is about
  if (!has_mating_material(pos) || pos.rule50 >= 100) {
    tree.make_terminal(node, kDraw);
    return true;
  }
  const int last = c.history->size() - 1;
  const int reps = c.history->repetitions(last);
  if (reps >= 2) {
    tree.make_terminal(node, kDraw);
    return true;
  }
  const int plies = depth - 1;
  const int cycle = c.history->cycle_length(last);
  if (reps == 1 && plies >= 4 && params_.TwoFoldDraws && plies >= cycle) {
    tree.make_terminal(node, kDraw, double(cycle), kTwoFold);
    return true;
  }
  if (evaluator_.tb_probe && pos.castling_rooks == 0 && pos.rule50 == 0 &&
      popcount(pos.occupied()) <= evaluator_.tb_max_pieces) {
    int wdl = 0;
    const std::string fen = to_fen(pos, false);
    if (evaluator_.tb_probe(evaluator_.tb_ctx, fen.c_str(), &wdl)) {
      // No network value here: plies left from the parent, like lc0.
      const double m = std::max(0.0, tree.node(tree.node(node).parent).m - 1.0);
      // Side to move at the node wins -> the mover into it loses; cursed
      // wins and blessed losses count as draws.
      const int result = wdl == 2 ? kLoss : wdl == -2 ? kWin : kDraw;
      tree.make_terminal(node, result, m, kTablebase);
      ++tb_hits_;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------- prefetch

void Search::prefetch(PickContext& ctx, uint32_t node, int budget, bool is_odd_depth, bool is_root, int* spent) {
  *spent = 0;
  if (budget <= 0) return;
  Tree& tree = *tree_;
  if (node == kNone || tree.node(node).n + tree.node(node).n_in_flight == 0) {
    const Position& pos = ctx.history->last();
    const uint64_t key = NNCache::key(pos, ctx.history->repetitions(ctx.history->size() - 1));
    *spent = 1;
    if (cache_->contains(key)) return;
    MoveList moves;
    legal_moves(pos, &moves);
    order_like_python_chess(pos, &moves);
    add_request(ctx, kNone, key, moves);
    return;
  }
  const Node& nd = tree.node(node);
  if (nd.n == 0 || nd.terminal) return;
  const double draw_score = is_odd_depth ? draw_score_odd_ : draw_score_even_;
  const double puct_mult = cpuct(nd.n, is_root) * std::sqrt(double(std::max<uint32_t>(nd.n, 2) - 1));
  const double fpu_value = fpu(node, is_root, draw_score, tree.visited_policy(node));
  struct Scored {
    double score;
    int k;
    uint32_t child;
  };
  std::vector<Scored> scored;
  scored.reserve(nd.num_edges);
  for (EdgeWalk w(tree, node); w.valid(); w.next()) {
    const uint32_t c = w.child();
    const long long ns = c != kNone ? (long long)tree.node(c).n + tree.node(c).n_in_flight : 0;
    const double q = c != kNone && tree.node(c).n > 0 ? tree.node(c).wl + draw_score * tree.node(c).d
                                                      : fpu_value;
    scored.push_back({-(tree.prior(w.edge_id()) * puct_mult / (1 + ns)) - q, w.index(), c});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.score < b.score; });
  const uint32_t first = nd.edges;
  int budget_to_spend = budget;
  for (size_t i = 0; i < scored.size(); ++i) {
    if (budget <= 0) break;
    const uint32_t c = scored[i].child;
    const int k = scored[i].k;
    const bool visited = c != kNone && tree.node(c).n > 0;
    if (i != scored.size() - 1) {
      const double next_score = -scored[i + 1].score;
      // lc0 uses -fpu as the default here (a quirk kept for parity).
      const double q = visited ? tree.node(c).wl + draw_score * tree.node(c).d : -fpu_value;
      if (next_score > q) {
        const long long ns = c != kNone ? (long long)tree.node(c).n + tree.node(c).n_in_flight : 0;
        // int() truncates; huge quotients just mean "the whole budget".
        const double raw = tree.prior(first + k) * puct_mult / (next_score - q) - double(ns);
        budget_to_spend = raw >= double(budget) ? budget : int(std::min<long long>(budget, (long long)raw + 1));
      } else {
        budget_to_spend = budget;
      }
    }
    if (budget_to_spend <= 0) continue;
    if (c != kNone) {
      const Node& cn = tree.node(c);
      if (cn.n + cn.n_in_flight > 0 && (cn.n == 0 || cn.terminal)) continue;
    }
    ctx.history->push(move_of(tree.edge(first + k).move));
    int used = 0;
    prefetch(ctx, c, budget_to_spend, !is_odd_depth, false, &used);
    ctx.history->pop();
    budget -= used;
    *spent += used;
  }
}

}  // namespace search
}  // namespace lc0core
