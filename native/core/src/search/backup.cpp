// backup.cpp - finishing a batch: fresh values into the tree
// (lc0's DoBackupUpdateSingleNode), certainty propagation (MaybeSetBounds),
// cancelling collisions, abandoning a batch when the search stops midway.
#include <algorithm>
#include <chrono>
#include <vector>
#include "search.h"

namespace lc0core {
namespace search {

// A parent that became terminal: the visits already in it get the value's
// change too (lc0's n_to_fix).
struct BackupFix {
  bool terminal = false;
  uint32_t n_to_fix = 0;
  double v_delta = 0.0, d_delta = 0.0, m_delta = 0.0;
};

bool Search::finish() {
  const auto started = Clock::now();
  const int results = int(batch_->requests.size());
  if (results > 0) {
    last_batch_ms_ = batch_->seconds * 1000.0;
    --nn_pending_;
    ++network_batches_;
    network_seconds_ += batch_->seconds;
  }
  nn_evals_ += results;
  bool work_done = batch_->ooo > 0;
  for (Visit& v : batch_->visits) {
    if (v.collision) continue;
    work_done = true;
    if (v.nn_slot >= 0) {
      const Request& r = batch_->requests[v.nn_slot];
      const float* wdl = batch_->wdl.data() + size_t(v.nn_slot) * 3;
      const double q = double(wdl[0]) - double(wdl[2]);
      const float d = wdl[1], m = batch_->moves_left[v.nn_slot];
      set_priors(v.node, r);
      v.q = -q, v.d = d, v.m = m;
      if (rescale_on_) rescale(&v);
      if (!worker_mode_) cache_edges(v.node, r.key, q, d, m);   // workers cached it unlocked
    }
    backup(v);
  }
  settle_deferred();
  // Prefetched positions only go to the cache (workers' are there already).
  const size_t requests = worker_mode_ ? 0 : batch_->requests.size();
  for (size_t slot = 0; slot < requests; ++slot) {
    if (batch_->requests[slot].node == kNone) cache_request(*batch_, slot);
  }
  for (const Visit& v : batch_->visits) {
    if (v.collision) cancel_in_flight(v.node, v.multivisit);
  }
  if (work_done) ++total_batches_;
  if (!nps_started_ && total_playouts_ > 0) {
    nps_started_ = true;
    nps_start_ = Clock::now();
  }
  const bool stop = should_stop();
  playouts_hint_.store(remaining_playouts_, std::memory_order_relaxed);
  backup_seconds_ += std::chrono::duration<double>(Clock::now() - started).count();
  return stop;
}

bool Search::stops_midway() {
  // lc0's watchdog view: the stopper chain on the state after the gather,
  // with its own hints (the worker's stay as they were).
  if (batch_->requests.empty()) return false;
  const double saved_playouts = remaining_playouts_, saved_time = remaining_time_ms_;
  const bool stop = should_stop();
  remaining_playouts_ = saved_playouts, remaining_time_ms_ = saved_time;
  return stop;
}

void Search::abandon() {
  Tree& tree = *tree_;
  if (!batch_->requests.empty()) --nn_pending_;
  for (const Visit& v : batch_->visits) {
    if (v.collision) {
      cancel_in_flight(v.node, v.multivisit);
    } else if (v.nn_slot >= 0) {
      Node& n = tree.node(v.node);
      --n.n_in_flight;
      cancel_in_flight(v.node, 1);
      n.edges = kNone;
      n.num_edges = 0;
    } else {
      backup(v);
    }
  }
}

void Search::cancel_in_flight(uint32_t node, int visits) {
  Tree& tree = *tree_;
  for (uint32_t n = tree.node(node).parent; n != kNone; n = tree.node(n).parent) {
    if (worker_mode_) {
      add_in_flight(tree.node(n), -visits);
    } else {
      tree.node(n).n_in_flight -= visits;
    }
  }
}

void Search::settle_deferred() {
  if (deferred_backups_.empty() && solid_pending_.empty()) return;
  // Worker mode: the tree mutex held and the pickers' lock shared. Every
  // exclusive holder takes the tree mutex first, so none comes between
  // letting the lock go and taking it exclusively.
  pick_lock_.unlock_shared();
  pick_lock_.lock();
  backing_up_shared_ = false;
  // Deepest first: making a node solid moves its children (their ids
  // change), so each node goes before its ancestors, and all of them before
  // the deferred backups, which may make nodes solid on their way up (and
  // would leave ids here stale).
  std::sort(solid_pending_.begin(), solid_pending_.end(),
            [](const std::pair<int, uint32_t>& a, const std::pair<int, uint32_t>& b) { return a.first > b.first; });
  const uint32_t solid_threshold = uint32_t(std::max(1, params_.SolidTreeThreshold));
  for (const auto& pending : solid_pending_) {
    const Node& n = tree_->node(pending.second);
    if (!n.solid && n.n >= solid_threshold) tree_->make_solid(pending.second);
  }
  solid_pending_.clear();
  for (const Visit& v : deferred_backups_) backup(v);
  deferred_backups_.clear();
  backing_up_shared_ = true;
  pick_lock_.unlock();
  pick_lock_.lock_shared();
}

void Search::backup(const Visit& visit) {
  Tree& tree = *tree_;
  uint32_t node = visit.node;
  const int mv = visit.multivisit;
  bool update_bounds = params_.StickyEndgames && tree.node(node).terminal != kNonTerminal &&
                       tree.node(node).n == 0;
  // Beside the pickers, a fresh terminal whose certainty propagation would
  // change a bound waits for settle_deferred (its parents may become
  // terminal); one whose propagation would only write the bounds already
  // there is backed up now (most do: a two-fold draw sets no bound).
  uint32_t bounds_end = kNone;
  const bool bounds_known = update_bounds && backing_up_shared_;
  if (bounds_known && !bounds_unchanged(node, &bounds_end)) {
    deferred_backups_.push_back(visit);
    return;
  }
  int depth = visit.depth;
  double v = visit.q, d = visit.d, m = visit.m;
  uint32_t n_to_fix = 0;
  double v_delta = 0.0, d_delta = 0.0, m_delta = 0.0;
  const uint32_t root = tree.root();
  const uint32_t solid_threshold = uint32_t(std::max(1, params_.SolidTreeThreshold));
  while (true) {
    Node& n = tree.node(node);
    const uint32_t p = n.parent;
    if (n.terminal) v = n.wl, d = n.d, m = n.m;
    const uint32_t n_new = n.n + mv;
    if (!n.terminal) {                // (a terminal's mean of its own value stays as it is)
      double wl = n.wl, dd = n.d, mm = n.m;
      wl += mv * (v - wl) / n_new;
      dd += mv * (d - dd) / n_new;
      mm += mv * (m - mm) / n_new;
      if (n_to_fix > 0) {
        wl += n_to_fix * v_delta / n_new;
        dd += n_to_fix * d_delta / n_new;
        mm += n_to_fix * m_delta / n_new;
      }
      store_value(n.wl, wl), store_value(n.d, dd), store_value(n.m, mm);
    }
    store_visits(n, n_new);           // after the values, for pickers (tree.h)
    if (worker_mode_) {
      __atomic_fetch_sub(&n.n_in_flight, uint32_t(mv), __ATOMIC_RELEASE);   // pairs with start_first_visit
    } else {
      n.n_in_flight -= mv;
    }
    if (n_new >= solid_threshold && !n.solid) {
      if (!backing_up_shared_) {
        tree.make_solid(node);
      } else if (tree.may_make_solid(node)) {
        solid_pending_.emplace_back(depth, node);
      }
    }
    if (p == kNone) break;
    const bool old_update_bounds = update_bounds;
    if (tree.node(p).terminal) n_to_fix = 0;
    if (update_bounds && p != root && !tree.node(p).terminal) {
      if (bounds_known) {
        update_bounds = p != bounds_end;  // maybe_set_bounds' answer, its bounds there already
      } else {
        BackupFix fix;
        update_bounds = maybe_set_bounds(p, m, &fix);
        if (update_bounds && fix.terminal) {
          n_to_fix = fix.n_to_fix, v_delta = fix.v_delta, d_delta = fix.d_delta, m_delta = fix.m_delta;
        }
      }
    } else {
      update_bounds = false;
    }
    v = -v;
    v_delta = -v_delta;
    m += 1;
    --depth;
    if (p == root) {
      const uint32_t current_best = current_best_.load(std::memory_order_relaxed);
      const uint32_t best_c = current_best != kNone
                                  ? tree.find_child(root, int(current_best - tree.node(root).edges))
                                  : kNone;
      const uint32_t best_n = best_c != kNone ? tree.node(best_c).n : 0;
      if ((old_update_bounds && tree.node(node).terminal) ||
          (node != best_c && best_n <= tree.node(node).n)) {
        update_current_best();
      }
    }
    node = p;
  }
  total_playouts_ += mv;
  cum_depth_ += (long long)visit.depth * mv;
  max_depth_ = std::max(max_depth_, visit.depth);
}

// maybe_set_bounds' aggregate of p's children's bounds (lc0's order and
// short cut); false when it is the regular node's (loss, win).
static bool children_bounds(const Tree& tree, uint32_t p, int* lower, int* upper, double* losing_m,
                            bool* prefer_tb) {
  *lower = kLoss, *upper = kLoss, *losing_m = 0.0, *prefer_tb = false;
  for (EdgeWalk w(tree, p); w.valid(); w.next()) {
    const uint32_t c = w.child();
    int e_lower = kLoss, e_upper = kWin;
    bool is_tb = false;
    if (c != kNone) {                 // a child may be being expanded (terminal_of)
      const Node& cn = tree.node(c);
      is_tb = terminal_of(cn) == kTablebase;
      e_lower = lower_of(cn), e_upper = upper_of(cn);
    }
    *lower = std::max(*lower, e_lower);
    *upper = std::max(*upper, e_upper);
    if (e_lower == kWin && !is_tb) {
      *prefer_tb = false;
      break;
    } else if (e_upper == kLoss) {
      *losing_m = std::max(*losing_m, c != kNone && tree.node(c).n > 0 ? tree.node(c).m : 0.0);
    }
    *prefer_tb = *prefer_tb || is_tb;
  }
  return !(*lower == kLoss && *upper == kWin);
}

bool Search::bounds_unchanged(uint32_t node, uint32_t* end) const {
  // backup()'s walk up the ancestors, reading only: each ancestor below
  // the root that is not terminal gets maybe_set_bounds, until one keeps
  // the regular bounds.
  const Tree& tree = *tree_;
  const uint32_t root = tree.root();
  for (uint32_t p = tree.node(node).parent; p != kNone && p != root && !tree.node(p).terminal;
       p = tree.node(p).parent) {
    int lower, upper;
    double losing_m;
    bool prefer_tb;
    if (!children_bounds(tree, p, &lower, &upper, &losing_m, &prefer_tb)) {
      *end = p;
      return true;
    }
    const Node& pn = tree.node(p);
    if (lower == upper || lower_of(pn) != -upper || upper_of(pn) != -lower) return false;
  }
  *end = kNone;
  return true;
}

bool Search::maybe_set_bounds(uint32_t p, double m, BackupFix* fix) {
  // Certainty propagation: false when the parent stays a regular node.
  Tree& tree = *tree_;
  int lower, upper;
  double losing_m;
  bool prefer_tb;
  if (!children_bounds(tree, p, &lower, &upper, &losing_m, &prefer_tb)) return false;
  Node& pn = tree.node(p);
  if (lower == upper) {
    fix->terminal = true;
    fix->n_to_fix = pn.n;
    const double cur_v = pn.wl, cur_d = pn.d, cur_m = pn.m;
    const double plies = (upper == kLoss ? std::max(losing_m, m) : m) + 1.0;
    tree.make_terminal(p, -upper, plies, prefer_tb ? kTablebase : kEndOfGame);
    fix->v_delta = -(pn.wl - cur_v);
    fix->d_delta = pn.d - cur_d;
    fix->m_delta = pn.m - cur_m;
    return true;
  }
  pn.lower = int8_t(-upper), pn.upper = int8_t(-lower);
  return true;
}

}  // namespace search
}  // namespace lc0core
