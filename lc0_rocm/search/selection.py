"""Which move is best: lc0's GetBestChildrenNoTemperature ordering
(proven results, visits, Q, prior), the principal variation, and the
temperature pick at the root. A mixin of `core.Search`."""
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

    def best_root_edge_with_temperature(self, temperature: float, rng=None) -> int:
        """lc0's GetBestRootChildWithTemperature: sample a root edge with
        weight ((N + offset) / max N)^(1/T) among edges whose Q is within
        TempValueCutoff (in win %) of the most visited one."""
        import random
        rng = rng or random
        tree = self.tree
        p = self.params
        draw_score = self.draw_score_even
        fpu = self._fpu(0, True, draw_score, tree.visited_policy(0))
        offset = p.TempVisitOffset
        edges = [j for j in tree.edges(0)
                 if not self.root_filter or tree.e_move[j] in self.root_filter]

        def n_of(j):
            c = tree.e_child[j]
            return tree.n[c] if c >= 0 else 0

        def q_of(j):
            c = tree.e_child[j]
            return tree.wl[c] + draw_score * tree.d[c] if c >= 0 and tree.n[c] > 0 else fpu

        max_n, max_eval = 0.0, -1.0
        for j in edges:
            if n_of(j) + offset > max_n:
                max_n, max_eval = n_of(j) + offset, q_of(j)
        min_eval = max_eval - p.TempValueCutoff / 50.0
        candidates, weights = [], []
        for j in edges:
            if q_of(j) < min_eval:
                continue
            base = tree.e_p[j] if max_n <= 0 else (n_of(j) + offset) / max_n
            candidates.append(j)
            weights.append(max(0.0, base) ** (1 / temperature))
        if not candidates or sum(weights) <= 0:
            best = self.best_edges(0, 1, 0)
            return best[0] if best else -1
        return rng.choices(candidates, weights)[0]

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
