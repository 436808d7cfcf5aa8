// tree.cpp - node and edge storage and lc0's node operations.
#include "tree.h"

#include <cmath>
#include <utility>

namespace lc0core {
namespace search {

uint32_t Tree::new_node(uint32_t parent, int edge_index) {
  const uint32_t id = nodes_.allocate(1);
  Node& n = nodes_[id];
  n = Node();
  n.parent = parent;
  n.edge_index = uint8_t(edge_index);
  return id;
}

void Tree::clear() {
  nodes_.reset();
  edges_.reset();
  root_ = new_node(kNone, 0);
}

uint32_t Tree::find_in_list(uint32_t node, int k, uint32_t* prev) const {
  // The child list is sorted by edge index; links are read with acquire
  // since another thread may be linking a new child in (paired with the
  // release store below: the child is seen set up).
  uint32_t c = __atomic_load_n(*prev == kNone ? &nodes_[node].first_child : &nodes_[*prev].next_sibling,
                               __ATOMIC_ACQUIRE);
  while (c != kNone && nodes_[c].edge_index < k) {
    *prev = c;
    c = __atomic_load_n(&nodes_[c].next_sibling, __ATOMIC_ACQUIRE);
  }
  return c;
}

uint32_t Tree::find_child(uint32_t node, int k) const {
  if (nodes_[node].solid) return nodes_[node].first_child + uint32_t(k);
  uint32_t prev = kNone;
  const uint32_t c = find_in_list(node, k, &prev);
  return c != kNone && nodes_[c].edge_index == k ? c : kNone;
}

uint32_t Tree::child(uint32_t node, int k) {
  if (nodes_[node].solid) return nodes_[node].first_child + uint32_t(k);
  uint32_t prev = kNone;
  uint32_t fresh = kNone;
  while (true) {
    const uint32_t c = find_in_list(node, k, &prev);
    if (c != kNone && nodes_[c].edge_index == k) return c;   // (a spawn that lost stays unlinked)
    if (fresh == kNone) fresh = new_node(node, k);
    nodes_[fresh].next_sibling = c;
    // Linked in whole, between prev and c, only where the link still leads to c: else
    // another thread linked a child in there meanwhile (children are only
    // ever linked in, so prev stays before k), and the walk goes on from prev.
    uint32_t* link = prev == kNone ? &nodes_[node].first_child : &nodes_[prev].next_sibling;
    uint32_t expected = c;
    if (__atomic_compare_exchange_n(link, &expected, fresh, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
      return fresh;
    }
  }
}

void Tree::create_edges(uint32_t node, const Move* moves, int count) {
  Node& n = nodes_[node];
  n.num_edges = uint8_t(count);
  if (count == 0) {
    n.edges = kNone;
    return;
  }
  n.edges = edges_.allocate(uint32_t(count));
  for (int i = 0; i < count; ++i) {
    edges_[n.edges + i].move = moves[i].raw;
    edges_[n.edges + i].prior = 0;
  }
}

void Tree::make_terminal(uint32_t node, int result, double plies_left, int kind) {
  // Stored atomically, the kind last (terminal_of, tree.h): a leaf being
  // expanded is made terminal with no lock held.
  Node& n = nodes_[node];
  if (kind != kTwoFold) {
    __atomic_store_n(&n.lower, int8_t(result), __ATOMIC_RELAXED);
    __atomic_store_n(&n.upper, int8_t(result), __ATOMIC_RELAXED);
  }
  store_value(n.m, plies_left);
  store_value(n.wl, result == kDraw ? 0.0 : result == kWin ? 1.0 : -1.0);
  store_value(n.d, result == kDraw ? 1.0 : 0.0);
  // A proven loss must not attract visits through its prior.
  if (result == kLoss && parent_of(n) != kNone) {
    __atomic_store_n(&edges_[own_edge(node)].prior, uint16_t(0), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&n.terminal, uint8_t(kind), __ATOMIC_RELEASE);
}

void Tree::make_not_terminal(uint32_t node) {
  Node& n = nodes_[node];
  n.terminal = kNonTerminal;
  uint32_t visits = 0;
  if (is_expanded(node)) {
    visits = 1;
    double wl = n.wl, d = n.d;
    for (uint32_t c = n.first_child; c != kNone; c = nodes_[c].next_sibling) {
      const Node& child = nodes_[c];
      if (child.n > 0) {
        visits += child.n;
        wl += -child.wl * child.n;
        d += child.d * child.n;
      }
    }
    n.wl = wl / visits;
    n.d = d / visits;
  }
  n.n = visits;
}

void Tree::revert_terminal_visits(uint32_t node, double v, double d, double m, uint32_t visits) {
  Node& n = nodes_[node];
  const int64_t n_new = int64_t(n.n) - visits;
  if (n_new <= 0) {
    n.wl = 0.0, n.d = 1.0, n.m = 0.0, n.n = 0;
  } else {
    n.wl -= visits * (v - n.wl) / n_new;
    n.d -= visits * (d - n.d) / n_new;
    n.m -= visits * (m - n.m) / n_new;
    n.n = uint32_t(n_new);
  }
}

double Tree::visited_policy(uint32_t node) const {
  double sum = 0.0;
  for (EdgeWalk w(*this, node); w.valid(); w.next()) {
    if (w.child() != kNone && visits_of(nodes_[w.child()]) > 0) sum += prior(w.edge_id());
  }
  return sum;
}

bool Tree::may_make_solid(uint32_t node) const {
  const Node& n = nodes_[node];
  if (n.solid || n.num_edges == 0 || n.edges == kNone || n.terminal) return false;
  uint32_t children_in_flight = 0;
  for (uint32_t c = __atomic_load_n(&n.first_child, __ATOMIC_ACQUIRE); c != kNone;
       c = __atomic_load_n(&nodes_[c].next_sibling, __ATOMIC_ACQUIRE)) {
    const Node& cn = nodes_[c];
    const uint32_t cn_in_flight = in_flight(cn);
    if (cn_in_flight > 0 && (visits_of(cn) <= 1 || cn.terminal)) return false;   // a visit refers to it
    children_in_flight += cn_in_flight;
  }
  return children_in_flight == in_flight(n);   // else collisions at a child refer to it
}

bool Tree::make_solid(uint32_t node) {
  if (!may_make_solid(node)) return false;
  Node& n = nodes_[node];
  const uint32_t block = nodes_.allocate(n.num_edges);
  for (int k = 0; k < n.num_edges; ++k) {
    Node& fresh = nodes_[block + k];
    fresh = Node();
    fresh.parent = node;
    fresh.edge_index = uint8_t(k);
  }
  for (uint32_t c = n.first_child; c != kNone; c = nodes_[c].next_sibling) {
    const uint32_t moved = block + nodes_[c].edge_index;
    nodes_[moved] = nodes_[c];
    for (uint32_t g = nodes_[moved].first_child; g != kNone; g = nodes_[g].next_sibling) {
      __atomic_store_n(&nodes_[g].parent, moved, __ATOMIC_RELEASE);   // after the copy (parent_of)
    }
  }
  for (int k = 0; k < n.num_edges; ++k) {
    nodes_[block + k].next_sibling = k + 1 < n.num_edges ? block + k + 1 : kNone;
  }
  n.first_child = block;
  n.solid = true;
  return true;
}

std::unique_ptr<Tree> Tree::subtree(uint32_t node) const {
  std::unique_ptr<Tree> out(new Tree());
  std::vector<std::pair<uint32_t, uint32_t>> stack = {{node, out->root()}};
  while (!stack.empty()) {
    const auto [old_id, new_id] = stack.back();
    stack.pop_back();
    const Node& old = nodes_[old_id];
    Node& fresh = out->nodes_[new_id];
    fresh.wl = old.wl, fresh.d = old.d, fresh.m = old.m;
    fresh.n = old.n, fresh.n_in_flight = 0;
    fresh.terminal = old.terminal, fresh.lower = old.lower, fresh.upper = old.upper;
    if (old.edges == kNone) continue;
    fresh.num_edges = old.num_edges;
    fresh.edges = out->edges_.allocate(old.num_edges);
    for (int k = 0; k < old.num_edges; ++k) out->edges_[fresh.edges + k] = edges_[old.edges + k];
    uint32_t last = kNone;
    for (uint32_t c = old.first_child; c != kNone; c = nodes_[c].next_sibling) {
      const Node& cn = nodes_[c];
      if (cn.n == 0 && cn.edges == kNone && !cn.terminal) continue;   // an unvisited solid slot
      const uint32_t copy = out->new_node(new_id, nodes_[c].edge_index);
      if (last == kNone) {
        out->nodes_[new_id].first_child = copy;
      } else {
        out->nodes_[last].next_sibling = copy;
      }
      last = copy;
      stack.push_back({c, copy});
    }
  }
  return out;
}

std::string Tree::check() const {
  std::vector<uint32_t> stack{root_};
  while (!stack.empty()) {
    const uint32_t id = stack.back();
    stack.pop_back();
    const Node& n = nodes_[id];
    const std::string at = "node " + std::to_string(id) + ": ";
    if (n.n_in_flight != 0) return at + "visits still in flight";
    if (!std::isfinite(n.wl) || std::fabs(n.wl) > 1.0 + 1e-6) return at + "wl out of range";
    if (!std::isfinite(n.d) || n.d < -1e-6 || n.d > 1.0 + 1e-6) return at + "d out of range";
    if (!std::isfinite(n.m) || n.m < 0.0) return at + "m out of range";
    if (n.lower > n.upper) return at + "bounds crossed";
    uint64_t child_visits = 0;
    int last_index = -1;
    for (uint32_t c = n.first_child; c != kNone; c = nodes_[c].next_sibling) {
      const Node& cn = nodes_[c];
      if (cn.parent != id) return at + "a child's parent link is wrong";
      if (int(cn.edge_index) <= last_index || cn.edge_index >= n.num_edges) {
        return at + "child list out of order";
      }
      last_index = cn.edge_index;
      child_visits += cn.n;
      stack.push_back(c);
    }
    if (n.n > 0 && !n.terminal) {
      if (n.edges == kNone && n.num_edges > 0) return at + "visited but not expanded";
      if (uint64_t(n.n) != 1 + child_visits) {
        return at + "visits " + std::to_string(n.n) + " != 1 + children's " + std::to_string(child_visits);
      }
    }
  }
  return "";
}

}  // namespace search
}  // namespace lc0core
