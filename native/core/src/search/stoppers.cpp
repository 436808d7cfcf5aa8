// stoppers.cpp - lc0's stoppers (visits/playouts, time, depth, mate, KLD
// gain, smart pruning), the hints they leave for picking, and NpsLimit.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include "search.h"

namespace lc0core {
namespace search {

bool Search::should_stop() {
  // lc0's PopulateCommonIterationStats + stopper chain. Nothing stops a
  // search before its first playout, also not another search thread's
  // having stopped (a `stop` right after `go`: the thread holding the
  // root's first batch backs it up, so there is a best move).
  if (stopped_ && total_nodes() > 0) return true;
  remaining_playouts_ = 4e9;
  remaining_time_ms_ = std::numeric_limits<double>::infinity();
  if (total_nodes() == 0) return false;
  if (stop_->load(std::memory_order_relaxed)) {
    stopped_ = true;
    return true;
  }
  if (stoppers_fire()) stopped_ = true;
  return stopped_;
}

void Search::hint_playouts(double value) {
  if (value < remaining_playouts_) remaining_playouts_ = value;
}

long long Search::node_limit_left() const {
  // StrictNodes: visits a gathering may still start under the node limit,
  // those in flight (a pipelined batch's, other threads') counted as done.
  // A limit of 0 (the ABI takes it) leaves the root's first visit: nothing
  // stops a search before it, so a gathering may not end empty there.
  const long long limit = std::max<long long>(1, limits_.nodes);
  const Node& root = tree_->node(tree_->root());
  if (!worker_mode_) {
    const long long counted = params_.NodesAsPlayouts ? total_playouts_ : total_nodes();
    return limit - counted - (long long)in_flight(root);
  }
  // Threads back up beside the gatherers: a backup stores the root's visits
  // before it takes its own out of flight (both release), so reading the
  // visits in flight first (acquire), then the visits, never counts fewer
  // than there are.
  const long long flying = __atomic_load_n(&root.n_in_flight, __ATOMIC_ACQUIRE);
  const long long counted = (long long)visits_of(root) - (params_.NodesAsPlayouts ? initial_visits_ : 0);
  return limit - counted - flying;
}

bool Search::stoppers_fire() {
  const auto& p = params_;
  const auto& limits = limits_;
  const bool smart = p.SmartPruningFactor > 0 && !limits.infinite;
  const double node_limit = limits.nodes >= 0 ? double(limits.nodes) : 4e9;
  long long counted = total_nodes();
  if (limits.nodes >= 0 && p.NodesAsPlayouts) counted = total_playouts_;   // lc0's PlayoutsStopper
  if (smart) hint_playouts(node_limit - double(counted));
  if (double(counted) >= node_limit) return true;
  const double now = elapsed_ms();
  const double budgets[2] = {limits.movetime, limits.time_budget};
  for (int i = 0; i < 2; ++i) {
    const double budget = budgets[i];
    if (budget < 0 || limits.infinite) continue;
    remaining_time_ms_ = std::min(remaining_time_ms_, budget * 1000.0 - now);
    if (now >= budget * 1000.0) return true;
    // A hard limit also stops before a batch that would overrun it (judged
    // by the last batch's duration), as lc0's watchdog would.
    if (i == 0 && nn_pending_ > 0 && now + last_batch_ms_ >= budget * 1000.0) return true;
  }
  if (limits.depth >= 0 && cum_depth_ / std::max<long long>(total_playouts_, 1) >= limits.depth) return true;
  if (limits.mate >= 0 && mate_depth() <= limits.mate) return true;
  if (limits.infinite) return false;
  if (p.MinimumKLDGainPerNode > 0 && kld_gain_too_small()) return true;
  if (!smart) return false;
  return smart_pruning_fires(now);
}

bool Search::kld_gain_too_small() {
  // lc0's KldGainStopper.
  const double child_nodes = double(total_nodes()) - 1.0;
  if (child_nodes < kld_prev_nodes_ + params_.KLDGainAverageInterval) return false;
  std::vector<uint32_t> visits;
  bool win_found, may_resign;
  int losing;
  root_edge_stats(&visits, &win_found, &losing, &may_resign);
  if (!kld_prev_visits_.empty()) {
    double gain = 0.0;
    for (size_t i = 0; i < kld_prev_visits_.size() && i < visits.size(); ++i) {
      if (kld_prev_visits_[i]) {
        const double o_p = kld_prev_visits_[i] / kld_prev_nodes_;
        const double n_p = visits[i] / child_nodes;
        gain += o_p * std::log(o_p / n_p);
      }
    }
    if (gain / (child_nodes - kld_prev_nodes_) < params_.MinimumKLDGainPerNode) return true;
  }
  kld_prev_visits_ = visits;
  kld_prev_nodes_ = child_nodes;
  return false;
}

void Search::throttle() {
  // lc0's NpsLimit: wait while the search runs faster than allowed.
  const double limit = params_.NpsLimit;
  if (limit <= 0 || !nps_started_) return;
  while (!stop_requested()) {
    const double since = nps_elapsed_ms() / 1000.0;
    if (since <= 0 || total_playouts_ / since <= limit) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

double Search::mate_depth() const {
  // Moves to the shortest proven mate among the root's edges.
  const Tree& tree = *tree_;
  double best = std::numeric_limits<double>::infinity();
  for (EdgeWalk w(tree, tree.root()); w.valid(); w.next()) {
    const uint32_t c = w.child();
    if (c == kNone) continue;
    const Node& n = tree.node(c);
    if (n.n > 0 && n.terminal == kEndOfGame && n.wl == 1.0) {
      best = std::min(best, double((long long)std::floor(n.m + 0.5) / 2 + 1));
    }
  }
  return best;
}

void Search::root_edge_stats(std::vector<uint32_t>* edge_n, bool* win_found, int* losing,
                             bool* may_resign) const {
  const Tree& tree = *tree_;
  edge_n->clear();
  *win_found = false, *losing = 0, *may_resign = true;
  if (tree.node(tree.root()).n == 0) return;
  for (EdgeWalk w(tree, tree.root()); w.valid(); w.next()) {
    const uint32_t c = w.child();
    const uint32_t n = c != kNone ? tree.node(c).n : 0;
    edge_n->push_back(n);
    if (n > 0) {
      const Node& cn = tree.node(c);
      const double q = cn.wl + draw_score_odd_ * cn.d;
      if (cn.terminal && cn.wl > 0) *win_found = true;
      if (cn.terminal && cn.wl < 0) ++*losing;
      if (q > -0.98) *may_resign = false;
    }
  }
}

bool Search::smart_pruning_fires(double now_ms) {
  // lc0's SmartPruningStopper (last in the chain).
  std::vector<uint32_t> edge_n;
  bool win_found, may_resign;
  int losing;
  root_edge_stats(&edge_n, &win_found, &losing, &may_resign);
  if (edge_n.size() == 1) return true;                             // one legal move
  if (int(edge_n.size()) <= losing + (may_resign ? 0 : 1)) return true;   // at most one non-losing
  if (win_found) return true;
  if (total_playouts_ > 0 && first_eval_time_ms_ < 0) {
    first_eval_time_ms_ = now_ms;
    return false;
  }
  if (first_eval_time_ms_ < 0 || edge_n.empty()) return false;
  if (now_ms < first_eval_time_ms_ + 200) return false;           // kSmartPruningToleranceMs
  const long long nodes = total_playouts_ + 300;                  // kSmartPruningToleranceNodes
  const long long elapsed = (long long)(now_ms - first_eval_time_ms_);
  const long long nps = 1000 * nodes / std::max<long long>(elapsed, 1) + 1;
  const double factor = params_.SmartPruningFactor;
  const double remaining = std::min(remaining_time_ms_ / 1000.0 * double(nps) / factor,
                                    std::max(1.0, remaining_playouts_) / factor);
  if (!std::isinf(remaining)) hint_playouts(double((long long)remaining));
  if (total_batches_ < params_.SmartPruningMinimumBatches) return false;
  uint32_t largest = 0, second = 0;
  for (uint32_t n : edge_n) {
    if (n > largest) {
      second = largest, largest = n;
    } else if (n > second) {
      second = n;
    }
  }
  return remaining < double(largest) - double(second);
}

}  // namespace search
}  // namespace lc0core
