"""The search tree as flat arrays (plain Python lists indexed by node id).

Node i: parent, index of its edge in the parent, n (visits), n_in_flight,
wl (win minus loss), d (draw), m (plies left) -- all from the view of the
player who made the move into the node, like lc0 -- terminal type, bounds,
and its edges (first_edge .. first_edge + num_edges) once expanded.
Edge j: move (chess.Move), p (prior, as lc0 stores it: 16 bits), child node
id or -1 when no node was spawned yet.

Plain lists are faster than numpy for the scalar reads and writes of the
search's hot path; a native core can keep the same layout in C arrays.
"""
from __future__ import annotations

from array import array

import chess

# Terminal types (lc0's Node::Terminal).
NON_TERMINAL, END_OF_GAME, TWO_FOLD, TABLEBASE = 0, 1, 2, 3
# Game results from the view of the player who moved into the node
# (lc0's BLACK_WON / DRAW / WHITE_WON in its flipped convention).
LOSS, DRAW, WIN = -1, 0, 1

P_ZERO = 4.656612873077393e-10   # what lc0's 16-bit prior storage returns for 0


class Tree:
    """Flat node and edge arrays; node 0 is the root."""

    def __init__(self):
        self.parent: list[int] = []
        self.edge_index: list[int] = []
        self.n: list[int] = []
        self.n_in_flight: list[int] = []
        self.wl: list[float] = []
        self.d: list[float] = []
        self.m: list[float] = []
        self.terminal: list[int] = []
        self.lower: list[int] = []
        self.upper: list[int] = []
        self.first_edge: list[int] = []
        self.num_edges: list[int] = []
        self.e_move: list[chess.Move] = []
        # Edges are most of the memory: compact arrays (priors are float32
        # values already, lc0 keeps 16 bits of them).
        self.e_p = array("f")
        self.e_child = array("l")
        self.new_node(-1, -1)

    root = 0

    def __len__(self) -> int:
        return len(self.n)

    def new_node(self, parent: int, edge_index: int) -> int:
        self.parent.append(parent)
        self.edge_index.append(edge_index)
        self.n.append(0)
        self.n_in_flight.append(0)
        self.wl.append(0.0)
        self.d.append(1.0)
        self.m.append(0.0)
        self.terminal.append(NON_TERMINAL)
        self.lower.append(LOSS)
        self.upper.append(WIN)
        self.first_edge.append(-1)
        self.num_edges.append(0)
        return len(self.n) - 1

    def child(self, node: int, i: int) -> int:
        """Node id behind edge i of node, spawning it when absent."""
        j = self.first_edge[node] + i
        c = self.e_child[j]
        if c < 0:
            c = self.new_node(node, i)
            self.e_child[j] = c
        return c

    def create_edges(self, node: int, moves: list[chess.Move]) -> None:
        self.first_edge[node] = len(self.e_move)
        self.num_edges[node] = len(moves)
        self.e_move.extend(moves)
        self.e_p.extend(_zeros(len(moves)))
        self.e_child.extend(_minus_ones(len(moves)))

    def set_priors(self, node: int, order: list[int], priors: list[float]) -> None:
        """Store priors (already in lc0's 16-bit form) and reorder the edges
        by them, highest first (lc0's SortEdges); `order` is that ordering
        as indices into the edges as created. No child is spawned yet."""
        start = self.first_edge[node]
        moves = self.e_move[start:start + len(order)]
        self.e_move[start:start + len(order)] = [moves[k] for k in order]
        self.e_p[start:start + len(order)] = array("f", [priors[k] for k in order])

    def edges(self, node: int) -> range:
        start = self.first_edge[node]
        return range(start, start + self.num_edges[node]) if start >= 0 else range(0)

    def own_edge(self, node: int) -> int:
        return self.first_edge[self.parent[node]] + self.edge_index[node]

    def is_expanded(self, node: int) -> bool:
        return self.first_edge[node] >= 0

    # --- lc0 Node operations -------------------------------------------

    def make_terminal(self, node: int, result: int, plies_left: float = 0.0,
                      kind: int = END_OF_GAME) -> None:
        if kind != TWO_FOLD:
            self.lower[node] = self.upper[node] = result
        self.terminal[node] = kind
        self.m[node] = plies_left
        if result == DRAW:
            self.wl[node], self.d[node] = 0.0, 1.0
        elif result == WIN:
            self.wl[node], self.d[node] = 1.0, 0.0
        else:
            self.wl[node], self.d[node] = -1.0, 0.0
            # A proven loss must not attract visits through its prior.
            if self.parent[node] >= 0:
                self.e_p[self.own_edge(node)] = P_ZERO

    def make_not_terminal(self, node: int) -> None:
        """lc0's MakeNotTerminal: back to a searchable node whose value is the
        terminal value (one visit) plus its children's visits."""
        self.terminal[node] = NON_TERMINAL
        n = 0
        if self.is_expanded(node):
            n = 1
            wl, d = self.wl[node], self.d[node]
            for j in self.edges(node):
                c = self.e_child[j]
                if c >= 0 and self.n[c] > 0:
                    n += self.n[c]
                    wl += -self.wl[c] * self.n[c]
                    d += self.d[c] * self.n[c]
            self.wl[node], self.d[node] = wl / n, d / n
        self.n[node] = n

    def revert_terminal_visits(self, node: int, v: float, d: float, m: float, visits: int) -> None:
        n_new = self.n[node] - visits
        if n_new <= 0:
            self.wl[node], self.d[node], self.m[node], self.n[node] = 0.0, 1.0, 0.0, 0
        else:
            self.wl[node] -= visits * (v - self.wl[node]) / n_new
            self.d[node] -= visits * (d - self.d[node]) / n_new
            self.m[node] -= visits * (m - self.m[node]) / n_new
            self.n[node] = n_new

    def visited_policy(self, node: int) -> float:
        e_child, n, e_p = self.e_child, self.n, self.e_p
        return sum(e_p[j] for j in self.edges(node) if e_child[j] >= 0 and n[e_child[j]] > 0)

    # --- subtree extraction for tree reuse -----------------------------

    def subtree(self, node: int) -> "Tree":
        """A new Tree holding `node` (as root) and its descendants."""
        new = Tree()
        mapping = {node: 0}
        self._copy_node_fields(node, new, 0)
        queue = [node]
        while queue:
            old = queue.pop()
            new_id = mapping[old]
            if not self.is_expanded(old):
                continue
            edges = list(self.edges(old))
            new.create_edges(new_id, [self.e_move[j] for j in edges])
            start = new.first_edge[new_id]
            for k, j in enumerate(edges):
                new.e_p[start + k] = self.e_p[j]
                c = self.e_child[j]
                if c >= 0:
                    c_new = new.new_node(new_id, k)
                    new.e_child[start + k] = c_new
                    mapping[c] = c_new
                    self._copy_node_fields(c, new, c_new)
                    queue.append(c)
        return new

    def _copy_node_fields(self, old: int, new: "Tree", new_id: int) -> None:
        for name in ("n", "n_in_flight", "wl", "d", "m", "terminal", "lower", "upper"):
            getattr(new, name)[new_id] = getattr(self, name)[old]
        new.n_in_flight[new_id] = 0


def _zeros(n: int) -> array:
    return array("f", bytes(4 * n))


def _minus_ones(n: int) -> array:
    return array("l", [-1]) * n
