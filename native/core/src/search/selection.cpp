// selection.cpp - which edge is best: lc0's GetBestChildrenNoTemperature
// ordering (proven results, visits, Q, prior) and the principal variation.
#include <algorithm>
#include "search.h"

namespace lc0core {
namespace search {

void Search::update_current_best() {
  current_best_.store(best_edge(tree_->root(), 0), std::memory_order_relaxed);
}

int Search::edge_rank(uint32_t c) const {
  if (c == kNone) return 2;
  const Node& n = tree_->node(c);
  if (n.n == 0 || !n.terminal || n.wl == 0) return 2;    // non-terminal or draw
  if (n.terminal == kTablebase) return n.wl < 0 ? 1 : 3;
  return n.wl < 0 ? 0 : 4;
}

static int cmp_less(double a, double b) { return a < b ? -1 : (b < a ? 1 : 0); }

int Search::compare_edges(double draw_score, uint32_t a, uint32_t ca, uint32_t b, uint32_t cb) const {
  // -1 when edge a is preferred to edge b.
  const Tree& tree = *tree_;
  const int ra = edge_rank(ca), rb = edge_rank(cb);
  if (ra != rb) return ra > rb ? -1 : 1;
  const uint32_t na = ca != kNone ? tree.node(ca).n : 0;
  const uint32_t nb = cb != kNone ? tree.node(cb).n : 0;
  if (ra == 2 && na && nb && tree.node(ca).terminal && tree.node(cb).terminal) {
    const bool ta = tree.node(ca).terminal == kTablebase, tb = tree.node(cb).terminal == kTablebase;
    if (ta != tb) return ta < tb ? -1 : 1;
    return cmp_less(tree.node(ca).m, tree.node(cb).m);
  }
  if (ra == 2) {
    if (na != nb) return na > nb ? -1 : 1;
    const double qa = na ? tree.node(ca).wl + draw_score * tree.node(ca).d : 0.0;
    const double qb = nb ? tree.node(cb).wl + draw_score * tree.node(cb).d : 0.0;
    if (qa != qb) return qa > qb ? -1 : 1;
    const float pa = tree.prior(a), pb = tree.prior(b);
    return pa > pb ? -1 : (pb > pa ? 1 : 0);
  }
  const double ma = na ? tree.node(ca).m : 0.0;
  const double mb = nb ? tree.node(cb).m : 0.0;
  if (ra > 2) return cmp_less(ma, mb);       // shorter win first
  return cmp_less(mb, ma);                   // longer loss first
}

bool Search::edge_listed(uint32_t node, uint32_t edge_id) const {
  if (node != tree_->root() || root_filter_.empty()) return true;
  Move m;
  m.raw = tree_->edge(edge_id).move;
  return root_allowed(m);
}

bool Search::visited_draw(uint32_t child) const {
  return child != kNone && edge_rank(child) == 2 && tree_->node(child).n > 0 && tree_->node(child).terminal;
}

std::vector<uint32_t> Search::best_edges(uint32_t node, int count, int depth) const {
  const Tree& tree = *tree_;
  std::vector<uint32_t> out;
  if (tree.node(node).n == 0 || !tree.is_expanded(node)) return out;
  const double ds = depth % 2 == 1 ? draw_score_odd_ : draw_score_even_;
  std::vector<std::pair<uint32_t, uint32_t>> edges;   // (edge id, child)
  for (EdgeWalk w(tree, node); w.valid(); w.next()) {
    if (edge_listed(node, w.edge_id())) edges.push_back({w.edge_id(), w.child()});
  }
  std::stable_sort(edges.begin(), edges.end(), [&](const auto& x, const auto& y) {
    return compare_edges(ds, x.first, x.second, y.first, y.second) < 0;
  });
  for (size_t i = 0; i < edges.size() && int(i) < count; ++i) out.push_back(edges[i].first);
  return out;
}

uint32_t Search::best_edge(uint32_t node, int depth) const {
  // best_edges(node, 1, depth)[0] without sorting: the first edge that no
  // later one is strictly preferred to, which is what the stable sort puts
  // first while compare_edges orders the edges consistently. Visited draws
  // compare with each other by moves left but with other edges by visits,
  // which can go round in a circle: with two or more of them, the sort
  // decides, as before.
  const Tree& tree = *tree_;
  if (tree.node(node).n == 0 || !tree.is_expanded(node)) return kNone;
  const double ds = depth % 2 == 1 ? draw_score_odd_ : draw_score_even_;
  uint32_t best = kNone, best_child = kNone;
  int draws = 0;
  for (EdgeWalk w(tree, node); w.valid(); w.next()) {
    if (!edge_listed(node, w.edge_id())) continue;
    const uint32_t child = w.child();
    if (visited_draw(child) && ++draws > 1) {
      const std::vector<uint32_t> sorted = best_edges(node, 1, depth);
      return sorted.empty() ? kNone : sorted[0];
    }
    if (best == kNone || compare_edges(ds, w.edge_id(), child, best, best_child) < 0) {
      best = w.edge_id(), best_child = child;
    }
  }
  return best;
}

std::vector<Move> Search::principal_variation(uint32_t edge_id, int depth) const {
  const Tree& tree = *tree_;
  std::vector<Move> pv;
  // An edge's node: edge ids of a node are contiguous from its `edges`.
  uint32_t node = kNone;
  while (edge_id != kNone) {
    Move m;
    m.raw = tree.edge(edge_id).move;
    pv.push_back(m);
    if (node == kNone) node = tree.root();
    const uint32_t c = tree.find_child(node, int(edge_id - tree.node(node).edges));
    if (c == kNone) break;
    ++depth;
    edge_id = best_edge(c, depth);
    node = c;
  }
  return pv;
}

}  // namespace search
}  // namespace lc0core
