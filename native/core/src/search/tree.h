// tree.h - the search tree: nodes and edges in chunked pools, addressed by
// 32-bit ids, as lc0 stores them: an edge is a move and a 16-bit prior
// (4 bytes), a node exists only once visited and hangs in its parent's
// child list, which is sorted by edge index (lc0's child/sibling links).
// Values are from the view of the player who moved into the node.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "../position.h"
#include "fastmath.h"
#include "pool.h"

namespace lc0core {
namespace search {

constexpr uint32_t kNone = 0xFFFFFFFFu;
enum Terminal : uint8_t { kNonTerminal = 0, kEndOfGame = 1, kTwoFold = 2, kTablebase = 3 };
enum Result : int8_t { kLoss = -1, kDraw = 0, kWin = 1 };

struct Edge {          // 4 bytes, like lc0's
  uint16_t move;       // lc0core::Move::raw
  uint16_t prior;      // compress_prior() code
};

struct Node {          // 56 bytes (lc0's is 64)
  uint32_t parent = kNone;
  uint32_t first_child = kNone;   // lowest edge index first
  uint32_t next_sibling = kNone;
  uint32_t edges = kNone;         // first edge id; kNone until expanded
  double wl = 0.0, d = 1.0, m = 0.0;
  uint32_t n = 0, n_in_flight = 0;
  uint8_t edge_index = 0;         // this node's edge in the parent
  uint8_t num_edges = 0;
  uint8_t terminal = kNonTerminal;
  int8_t lower = kLoss, upper = kWin;
  bool solid = false;             // children: one block, child k at first_child + k
};

// Visits in flight are counted by search threads picking at once (under a
// shared lock, see pick_lock.h), so they change by atomic adds. Search
// threads with a slot each also back up beside the pickers (one at a time,
// under the tree mutex): a node's values are stored atomically and its
// visits last, with release, so a picker that loads a node's first visit
// (acquire) sees its edges, priors and values. Its shape (terminal bounds,
// solid children) changes only under the pickers' lock held exclusively
// or, for a leaf being expanded, by the thread that started it.
inline uint32_t in_flight(const Node& n) { return __atomic_load_n(&n.n_in_flight, __ATOMIC_RELAXED); }
inline void add_in_flight(Node& n, int32_t visits) {
  __atomic_fetch_add(&n.n_in_flight, uint32_t(visits), __ATOMIC_RELAXED);
}
// Starts the first visit of an unvisited node: fails when one is already in
// flight there (the node is being expanded). Acquire: a start that follows
// the node's backup (its visit in flight gone) sees the visits it stored,
// so the caller, reading them again, descends instead of expanding.
inline bool start_first_visit(Node& n) {
  uint32_t none = 0;
  return __atomic_compare_exchange_n(&n.n_in_flight, &none, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
inline uint32_t visits_of(const Node& n) { return __atomic_load_n(&n.n, __ATOMIC_ACQUIRE); }
inline void store_visits(Node& n, uint32_t visits) { __atomic_store_n(&n.n, visits, __ATOMIC_RELEASE); }
inline double load_value(const double& x) {
  double v;
  __atomic_load(&x, &v, __ATOMIC_RELAXED);
  return v;
}
inline void store_value(double& x, double v) { __atomic_store(&x, &v, __ATOMIC_RELAXED); }
// A node's parent, as a thread expanding a leaf reads it walking up to the
// root while make_solid may move the parent (both copies lead up alike;
// acquire: the moved copy is seen whole).
inline uint32_t parent_of(const Node& n) { return __atomic_load_n(&n.parent, __ATOMIC_ACQUIRE); }
// A leaf found terminal as it is expanded (no lock held) is read meanwhile
// by pickers (two-fold draws) and backups (its bounds): make_terminal stores
// its value, plies and bounds first and the kind last, with release; a
// reader that loads the kind with acquire sees the rest whole.
inline uint8_t terminal_of(const Node& n) { return __atomic_load_n(&n.terminal, __ATOMIC_ACQUIRE); }
inline int8_t lower_of(const Node& n) { return __atomic_load_n(&n.lower, __ATOMIC_RELAXED); }
inline int8_t upper_of(const Node& n) { return __atomic_load_n(&n.upper, __ATOMIC_RELAXED); }

class Tree {
 public:
  Tree() { root_ = new_node(kNone, 0); }
  // An empty tree (a root alone) in this tree's storage.
  void clear();
  uint32_t root() const { return root_; }
  Node& node(uint32_t id) { return nodes_[id]; }
  const Node& node(uint32_t id) const { return nodes_[id]; }
  Edge& edge(uint32_t id) { return edges_[id]; }
  const Edge& edge(uint32_t id) const { return edges_[id]; }
  // Atomic: a leaf made a proven loss as it is expanded zeroes its prior
  // while pickers at its parent read it (make_terminal).
  float prior(uint32_t edge_id) const {
    return decompress_prior(__atomic_load_n(&edges_[edge_id].prior, __ATOMIC_RELAXED));
  }
  uint32_t num_nodes() const { return nodes_.used(); }
  size_t bytes() const { return nodes_.bytes() + edges_.bytes(); }

  uint32_t new_node(uint32_t parent, int edge_index);
  // Edge `k` of `node`'s child node, spawned when absent. Safe while other
  // threads pick at the same node: a spawn is linked in whole by one
  // compare-and-swap, and readers of the child list see it or not.
  uint32_t child(uint32_t node, int k);
  // Edge `k`'s child, or kNone (no spawn).
  uint32_t find_child(uint32_t node, int k) const;
  void create_edges(uint32_t node, const Move* moves, int count);
  bool is_expanded(uint32_t node) const { return nodes_[node].edges != kNone; }
  uint32_t own_edge(uint32_t node) const {
    const Node& n = nodes_[node];
    return nodes_[parent_of(n)].edges + n.edge_index;
  }

  // lc0's node operations (see lc0_rocm/search/tree.py).
  void make_terminal(uint32_t node, int result, double plies_left = 0.0, int kind = kEndOfGame);
  void make_not_terminal(uint32_t node);
  void revert_terminal_visits(uint32_t node, double v, double d, double m, uint32_t visits);
  double visited_policy(uint32_t node) const;

  // lc0's MakeSolid: moves a busy node's children into one block, a node
  // for every edge, so picking walks them in order in memory. Only when no
  // visit in flight refers to a child (a leaf or collision there): callers
  // hold the tree lock, and the old copies stay readable (expansions that
  // run unlocked may still walk up through them). True when done.
  bool make_solid(uint32_t node);
  // Whether make_solid would now succeed (read beside pickers: a hint).
  bool may_make_solid(uint32_t node) const;

  // A new tree holding `node` and its subtree (tree reuse between moves).
  std::unique_ptr<Tree> subtree(uint32_t node) const;

  // The first broken invariant below the root of a tree at rest (no visit in
  // flight), or "" (for tests of concurrent searching): links, counts, a
  // non-terminal node's visits = 1 + its children's, finite values in range.
  std::string check() const;

 private:
  Pool<Node, 16> nodes_;               // allocated by several threads at once (pool.h)
  Pool<Edge, 18> edges_;
  // The first child at edge index >= k, *prev the one before it (kNone:
  // none); the walk starts after *prev when it is set.
  uint32_t find_in_list(uint32_t node, int k, uint32_t* prev) const;
  uint32_t root_;
};

// Walks a node's edges in order with their child node ids (kNone when no
// child was spawned), following the sorted child list (links read with
// acquire: a reader of results may walk while search threads link new
// children in, see Tree::child).
class EdgeWalk {
 public:
  EdgeWalk(const Tree& tree, uint32_t node)
      : tree_(tree), first_(tree.node(node).edges), count_(tree.node(node).num_edges),
        next_child_(__atomic_load_n(&tree.node(node).first_child, __ATOMIC_ACQUIRE)) {
    if (first_ == kNone) count_ = 0;
    settle();
  }
  bool valid() const { return k_ < count_; }
  int index() const { return k_; }
  uint32_t edge_id() const { return first_ + k_; }
  uint32_t child() const { return child_; }
  void next() {
    ++k_;
    settle();
  }

 private:
  void settle() {
    child_ = kNone;
    if (next_child_ != kNone && tree_.node(next_child_).edge_index == k_) {
      child_ = next_child_;
      next_child_ = __atomic_load_n(&tree_.node(next_child_).next_sibling, __ATOMIC_ACQUIRE);
    }
  }
  const Tree& tree_;
  uint32_t first_;
  int count_;
  int k_ = 0;
  uint32_t next_child_;
  uint32_t child_ = kNone;
};

}  // namespace search
}  // namespace lc0core
