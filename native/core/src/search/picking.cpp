// picking.cpp - lc0's PickNodesToExtend: multi-visit PUCT selection down the
// tree (FPU, CPUCT, moves-left utility), split into task-worker branches,
// and the visit recorded at each leaf it reaches.
#include "search.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace lc0core {
namespace search {
namespace {

constexpr double kLowest = -3.4028234663852886e38;
// pick_node's mark of a utility not yet set: below any real one.
constexpr double kNoUtil = -1e300;

// Picking shared counts visits in flight with atomic adds and reads them
// and the child lists with atomic loads (a link with acquire: it pairs with
// Tree::child's release store, so a new child is seen set up); picking
// alone with plain ones.
template <bool kShared>
inline void add_visits_in_flight(Node& n, int visits) {
  if (kShared) {
    add_in_flight(n, visits);
  } else {
    n.n_in_flight += uint32_t(visits);
  }
}

template <bool kShared>
inline uint32_t visits_in_flight(const Node& n) {
  return kShared ? in_flight(n) : n.n_in_flight;
}

template <bool kShared>
inline uint32_t link(const uint32_t& id) {
  return kShared ? __atomic_load_n(&id, __ATOMIC_ACQUIRE) : id;
}

// A node's visits and values: picking shared reads them atomically, as a
// search thread may be backing up beside it (tree.h).
template <bool kShared>
inline uint32_t visits(const Node& n) {
  return kShared ? visits_of(n) : n.n;
}

template <bool kShared>
inline double value(const double& x) {
  return kShared ? load_value(x) : x;
}

// An edge's prior: picking shared reads it atomically, as a thread
// expanding a child into a proven loss zeroes it meanwhile (make_terminal).
template <bool kShared>
inline float edge_prior(const Tree& tree, uint32_t edge_id) {
  return kShared ? tree.prior(edge_id) : decompress_prior(tree.edge(edge_id).prior);
}

}  // namespace

double Search::fpu(double wl, double d, bool is_root, double draw_score, double visited_pol) const {
  bool absolute;
  double value;
  params_.fpu(is_root, &absolute, &value);
  if (absolute) return value;
  return -(wl - draw_score * d) - value * std::sqrt(visited_pol);
}

double Search::cpuct(uint32_t n, bool is_root) const {
  double init, base, factor;
  params_.cpuct(is_root, &init, &base, &factor);
  return init + (factor != 0.0 ? factor * fast_log((n + base) / base) : 0.0);
}

template <bool kShared>
bool Search::try_start(uint32_t node) {
  Node& n = tree_->node(node);
  if (!kShared) {
    if (n.n == 0 && n.n_in_flight > 0) return false;
    ++n.n_in_flight;
    return true;
  }
  // The first visit of an unvisited node is claimed atomically, as other
  // threads may be picking it at once. A node seen unvisited may have been
  // backed up since: the claim then succeeds as an ordinary visit in
  // flight, and the caller, reading its visits after it, descends.
  if (visits_of(n) == 0) return start_first_visit(n);
  add_in_flight(n, 1);
  return true;
}

template <bool kShared>
void Search::pick_node(PickContext& c, uint32_t node, int limit, int depth, bool is_root, bool collision) {
  Tree& tree = *tree_;
  {
    Node& n = tree.node(node);
    bool leaf = collision || visits<kShared>(n) == 0 || n.terminal;
    if (leaf && is_root && try_start<kShared>(node)) {
      if (kShared && !collision && !n.terminal && visits<kShared>(n) > 0) {
        // Another thread's first visit was backed up since the root was
        // seen unvisited: the claim is an ordinary visit in flight (see
        // try_start), given back here, and the pick descends. (Visiting the
        // root itself again would add a visit that no child holds.)
        add_visits_in_flight<kShared>(n, -1);
        leaf = false;
      } else {
        --limit;
        visit(c, node, depth);
      }
    }
    if (leaf) {
      if (limit > 0) {
        Visit v;
        v.node = node, v.depth = depth, v.collision = true, v.multivisit = limit;
        v.maxvisit = (limit == c.pick_limit && c.max_limit > limit) ? c.max_limit : 0;
        c.out->visits.push_back(v);
      }
      return;
    }
    if (is_root) add_visits_in_flight<kShared>(n, limit);
  }
  const Node& nd = tree.node(node);
  const uint32_t first = nd.edges;
  const int num_edges = nd.num_edges;
  const uint32_t nd_n = visits<kShared>(nd);
  int max_needed = num_edges;
  if (!(is_root && !root_filter_.empty())) {
    max_needed = int(std::min<long long>(num_edges, (long long)nd_n + visits_in_flight<kShared>(nd) + limit + 2));
  }
  const double draw_score = depth % 2 == 0 ? draw_score_odd_ : draw_score_even_;

  PickEdge e[kMaxMoves];               // [0, ready) set up; the rest untouched
  double score[kMaxMoves];             // likewise
  double visited_pol = 0.0;
  // lc0's MEvaluator: prefer shorter wins and longer losses.
  const double nd_wl = value<kShared>(nd.wl);
  const bool m_on = evaluator_.has_moves_left && std::fabs(nd_wl) > params_.MovesLeftThreshold;
  const double parent_m = value<kShared>(nd.m);
  // Entries [0, ready) are filled; edges past the last child are unvisited
  // and, sorted by prior, looked at only as far as the selection reaches
  // (a sharp policy leaves most of them untouched).
  int ready = 0;
  auto open = [&](int upto) {
    for (; ready < upto; ++ready) {
      PickEdge& x = e[ready];
      x.pol = edge_prior<kShared>(tree, first + ready);
      x.util = kNoUtil, x.nstarted = 0, x.kid = kNone, x.to_perform = 0;
    }
  };
  // (Shared, another thread may link a child in meanwhile, which this pick
  // then meets in Tree::child.)
  for (uint32_t ch = link<kShared>(nd.first_child); ch != kNone; ch = link<kShared>(tree.node(ch).next_sibling)) {
    const Node& cn = tree.node(ch);
    const int k = cn.edge_index;
    const uint32_t cn_n = visits<kShared>(cn);
    if (k < max_needed) {
      open(k + 1);
      e[k].nstarted = (long long)cn_n + visits_in_flight<kShared>(cn), e[k].kid = ch;
    }
    if (cn_n > 0) {
      visited_pol += edge_prior<kShared>(tree, first + k);
      if (k < max_needed) {
        double q = value<kShared>(cn.wl) + draw_score * value<kShared>(cn.d);
        double u = q;
        if (m_on) {
          const auto& p = params_;
          double m = std::min(std::max(p.MovesLeftSlope * (value<kShared>(cn.m) - parent_m), -p.MovesLeftMaxEffect),
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
  const double fpu_value = fpu(nd_wl, value<kShared>(nd.d), is_root, draw_score, visited_pol);
  const double puct_mult = cpuct(nd_n, is_root) * std::sqrt(double(std::max<uint32_t>(nd_n, 2) - 1));
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
  const char* allowed = is_root ? c.root_allowed : nullptr;
  int collided = -1;                  // the edge whose visit could not start (at most one)

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
    bool collide = false;
    if (!being_expanded(child) && needs_two_fold_fix(child, depth)) {
      if (kShared) {
        // Undoing the draw changes its ancestors, which other threads are
        // reading: left for the next exclusive hold, a collision now.
        std::lock_guard<std::mutex> lock(fix_mutex_);
        pending_fixes_.emplace_back(child, depth);
        fixes_pending_.store(true, std::memory_order_release);
        collide = true;
      } else {
        ensure_two_fold_correct(child, depth);
      }
    }
    if (collide || !try_start<kShared>(child)) {
      // A failed start changes nothing the rounds read (try_start fails
      // without side effects, on a child being expanded, so no two-fold fix
      // either): every later round would pick this edge again with the same
      // estimate until the limit is spent. Give it the rest at once.
      b.to_perform += limit;
      limit = 0;
      collided = best_idx;
      break;
    }
    ++b.nstarted;
    --new_visits;
    Node& cn = tree.node(child);
    const uint32_t cn_n = visits<kShared>(cn);   // settled by the start (see try_start)
    if (cn_n > 0 && !cn.terminal) {
      add_visits_in_flight<kShared>(cn, new_visits);
      b.nstarted += new_visits;
    }
    const double nb = b.pol * puct_mult / (1 + b.nstarted) + b.util;
    score[best_idx] = nb;
    if (cn_n == 0 || cn.terminal) {
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
  pick_children<kShared>(c, depth, e, ready, collided);
}

template <bool kShared>
void Search::pick_children(PickContext& c, int depth, const PickEdge* e, int count, int collided) {
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
      task[idx] = k > params_.MinimumPickingWork && remaining >= params_.MinimumRemainingPickingWork && idx != collided &&
                  visits<kShared>(tree.node(e[idx].kid)) > 0 && !tree.node(e[idx].kid).terminal;
      any_task = any_task || task[idx];
    }
  }
  if (!any_task) {
    for (int idx = 0; idx < count; ++idx) {
      if (e[idx].to_perform > 0) {
        pick_node<kShared>(c, e[idx].kid, e[idx].to_perform, depth + 1, false, idx == collided);
      }
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
    auto pick_branch = [this, &c, e, depth, collided](Branch* branch) {
      try {
        PickContext sub{c.history, branch->out.get(), branch->max_limit, c.pick_limit, c.tasks};
        pick_node<kShared>(sub, e[branch->idx].kid, e[branch->idx].to_perform, depth + 1, false,
                           branch->idx == collided);
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

const char* Search::root_filter(Batch* batch) {
  // With few playouts left, only root edges that could still catch the best
  // (lc0's root pruning), and only `searchmoves` when given. Null: every
  // edge allowed (the usual case: the root's selection needs no filter).
  const uint32_t current_best = current_best_.load(std::memory_order_relaxed);
  if (root_filter_.empty() && current_best == kNone) return nullptr;
  Tree& tree = *tree_;
  const uint32_t root = tree.root();
  double best_n = 0;
  if (current_best != kNone) {
    const uint32_t best = tree.find_child(root, int(current_best - tree.node(root).edges));
    best_n = best != kNone ? visits_of(tree.node(best)) : 0;
  }
  const double remaining = std::max(1.0, playouts_left());
  // No edge trails the best by more than the playouts left: none excluded
  // (the usual case, the hint unset or large), without walking the edges.
  if (root_filter_.empty() && !(remaining < best_n)) return nullptr;
  std::vector<char>& allowed = batch->root_allowed;
  allowed.clear();
  bool any_excluded = false;
  for (EdgeWalk w(tree, root); w.valid(); w.next()) {
    const double n = w.child() != kNone ? visits_of(tree.node(w.child())) : 0;
    bool ok = w.edge_id() == current_best || !(remaining < best_n - n);
    if (ok && !root_filter_.empty() && !root_allowed(Move::from_raw(tree.edge(w.edge_id()).move))) ok = false;
    allowed.push_back(ok);
    any_excluded = any_excluded || !ok;
  }
  return any_excluded ? allowed.data() : nullptr;
}

void Search::pick(Batch* batch, const char* root_allowed, int limit, TaskWorkers* tasks, bool shared) {
  PickContext c{nullptr, batch, INT_MAX, limit, tasks};   // picking needs no board
  c.root_allowed = root_allowed;
  if (shared) {
    pick_node<true>(c, tree_->root(), limit, 1, true);
  } else {
    pick_node<false>(c, tree_->root(), limit, 1, true);
  }
}

// ------------------------------------------------------------------ leaves

void Search::visit(PickContext& c, uint32_t node, int depth) {
  Visit v;
  v.node = node, v.depth = depth;
  const Node& n = tree_->node(node);
  if (n.terminal || visits_of(n) > 0) {     // a terminal's values: fixed
    v.q = load_value(n.wl), v.d = load_value(n.d), v.m = load_value(n.m);
    v.ooo_done = params_.OutOfOrderEval;
  } else {
    v.expand = true;                 // expanded after the pick (expand_leaves)
  }
  c.out->visits.push_back(v);
}

}  // namespace search
}  // namespace lc0core
