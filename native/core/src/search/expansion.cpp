// expansion.cpp - lc0's ExtendNode (legal moves, terminal rules, tablebase
// probes, two-fold draws) for the leaves a batch picked, on task workers
// when there are many, and PrefetchIntoCache.
#include "search.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace lc0core {
namespace search {

// --------------------------------------------------------------- expanding

bool Search::being_expanded(uint32_t node) const {
  const Node& n = tree_->node(node);
  return visits_of(n) == 0 && in_flight(n) > 0;
}

void Search::expand_leaves(Batch* batch, size_t from, PositionHistory* history, TaskWorkers* tasks) {
  // lc0's ProcessPickedTask: the picked leaves get their boards, moves,
  // terminal checks, cache lookups and network inputs here (in worker mode
  // with the tree unlocked: gather_into_batch), split over the task workers
  // when there are enough of them. Requests keep the visits' order.
  std::vector<size_t>& leaves = batch->leaves;
  leaves.clear();
  for (size_t i = from; i < batch->visits.size(); ++i) {
    if (batch->visits[i].expand) leaves.push_back(i);
  }
  if (leaves.empty()) return;
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
    for (size_t k = common; k < path.size(); ++k) history->push(Move::from_raw(path[k]));
    at.swap(path);
    expand_leaf(c, &v);
  }
  for (size_t k = 0; k < at.size(); ++k) history->pop();
}

void Search::moves_from_root(uint32_t node, std::vector<uint16_t>* path) const {
  const Tree& tree = *tree_;
  path->clear();
  for (uint32_t n = node; n != tree.root(); n = parent_of(tree.node(n))) {
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
    legal_moves(pos, &moves);               // python-chess's order, as the reference's edges
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
      __builtin_popcountll(pos.occupied()) <= evaluator_.tb_max_pieces) {
    int wdl = 0;
    const std::string fen = to_fen(pos, false);
    if (evaluator_.tb_probe(evaluator_.tb_ctx, fen.c_str(), &wdl)) {
      // No network value here: plies left from the parent, like lc0.
      const double m = std::max(0.0, load_value(tree.node(parent_of(tree.node(node))).m) - 1.0);
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
  if (node == kNone || visits_of(tree.node(node)) + in_flight(tree.node(node)) == 0) {
    const Position& pos = ctx.history->last();
    const uint64_t key = NNCache::key(pos, ctx.history->repetitions(ctx.history->size() - 1));
    *spent = 1;
    if (cache_->contains(key)) return;
    MoveList moves;
    legal_moves(pos, &moves);               // python-chess's order, as the reference's edges
    add_request(ctx, kNone, key, moves);
    return;
  }
  // Read as a picker reads (a worker prefetches beside others' picking and backing up).
  const Node& nd = tree.node(node);
  const uint32_t nd_n = visits_of(nd);
  if (nd_n == 0 || nd.terminal) return;
  const double draw_score = is_odd_depth ? draw_score_odd_ : draw_score_even_;
  const double puct_mult = cpuct(nd_n, is_root) * std::sqrt(double(std::max<uint32_t>(nd_n, 2) - 1));
  const double fpu_value = fpu(load_value(nd.wl), load_value(nd.d), is_root, draw_score, tree.visited_policy(node));
  struct Scored {
    double score;
    int k;
    uint32_t child;
  };
  std::vector<Scored> scored;
  scored.reserve(nd.num_edges);
  for (EdgeWalk w(tree, node); w.valid(); w.next()) {
    const uint32_t c = w.child();
    const long long ns = c != kNone ? (long long)visits_of(tree.node(c)) + in_flight(tree.node(c)) : 0;
    const double q = c != kNone && visits_of(tree.node(c)) > 0
                         ? load_value(tree.node(c).wl) + draw_score * load_value(tree.node(c).d)
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
    const bool visited = c != kNone && visits_of(tree.node(c)) > 0;
    if (i != scored.size() - 1) {
      const double next_score = -scored[i + 1].score;
      // lc0 uses -fpu as the default here (a quirk kept for parity).
      const double q = visited ? load_value(tree.node(c).wl) + draw_score * load_value(tree.node(c).d) : -fpu_value;
      if (next_score > q) {
        const long long ns = c != kNone ? (long long)visits_of(tree.node(c)) + in_flight(tree.node(c)) : 0;
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
      const uint32_t cn_n = visits_of(cn);
      if (cn_n + in_flight(cn) > 0 && (cn_n == 0 || cn.terminal)) continue;
    }
    ctx.history->push(Move::from_raw(tree.edge(first + k).move));
    int used = 0;
    prefetch(ctx, c, budget_to_spend, !is_odd_depth, false, &used);
    ctx.history->pop();
    budget -= used;
    *spent += used;
  }
}

}  // namespace search
}  // namespace lc0core
