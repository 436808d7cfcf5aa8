"""Which move is best: lc0's GetBestChildrenNoTemperature ordering
(proven results, visits, Q, prior) and the principal variation. A mixin of
`core.Search` (the temperature pick at the root is the engine's, on either
search's root edges)."""
from __future__ import annotations

import functools

import chess

from lc0_rocm.search.tree import TABLEBASE


class SelectionMixin:
    """Needs the Search's tree, params, draw scores and root filter."""

    def _update_current_best(self) -> None:
        best = self.best_edges(0, 1, 0)
        self.current_best = best[0] if best else -1

    def best_edges(self, node: int, count: int, depth: int) -> list[int]:
        """lc0's GetBestChildrenNoTemperature: edge ids, best first."""
        tree = self.tree
        if tree.n[node] == 0 or not tree.is_expanded(node):
            return []
        draw_score = self.draw_score_odd if depth % 2 == 1 else self.draw_score_even
        edges = list(tree.edges(node))
        if node == 0 and self.root_filter:
            edges = [j for j in edges if tree.e_move[j] in self.root_filter]
        key = functools.cmp_to_key(functools.partial(self._compare_edges, draw_score))
        edges.sort(key=key)
        return edges[:count]

    def _edge_rank(self, c: int) -> int:
        tree = self.tree
        if c < 0 or tree.n[c] == 0 or not tree.terminal[c] or tree.wl[c] == 0:
            return 2                                   # non-terminal or draw
        if tree.terminal[c] == TABLEBASE:
            return 1 if tree.wl[c] < 0 else 3
        return 0 if tree.wl[c] < 0 else 4

    def _compare_edges(self, draw_score: float, a: int, b: int) -> int:
        """-1 when edge a is preferred to edge b."""
        tree = self.tree
        ca, cb = tree.e_child[a], tree.e_child[b]
        ra, rb = self._edge_rank(ca), self._edge_rank(cb)
        if ra != rb:
            return -1 if ra > rb else 1
        na = tree.n[ca] if ca >= 0 else 0
        nb = tree.n[cb] if cb >= 0 else 0
        if ra == 2 and na and nb and tree.terminal[ca] and tree.terminal[cb]:
            ta, tb = tree.terminal[ca] == TABLEBASE, tree.terminal[cb] == TABLEBASE
            if ta != tb:
                return -1 if ta < tb else 1
            return _cmp_less(tree.m[ca], tree.m[cb])
        if ra == 2:
            if na != nb:
                return -1 if na > nb else 1
            qa = tree.wl[ca] + draw_score * tree.d[ca] if na else 0.0
            qb = tree.wl[cb] + draw_score * tree.d[cb] if nb else 0.0
            if qa != qb:
                return -1 if qa > qb else 1
            pa, pb = tree.e_p[a], tree.e_p[b]
            return -1 if pa > pb else (1 if pb > pa else 0)
        ma = tree.m[ca] if na else 0.0
        mb = tree.m[cb] if nb else 0.0
        if ra > 2:
            return _cmp_less(ma, mb)                   # shorter win first
        return _cmp_less(mb, ma)                       # longer loss first

    def principal_variation(self, edge: int, depth: int = 0) -> list[chess.Move]:
        tree = self.tree
        pv = []
        while edge >= 0:
            pv.append(tree.e_move[edge])
            c = tree.e_child[edge]
            if c < 0:
                break
            depth += 1
            nxt = self.best_edges(c, 1, depth)
            edge = nxt[0] if nxt else -1
        return pv


def _cmp_less(a: float, b: float) -> int:
    return -1 if a < b else (1 if b < a else 0)
