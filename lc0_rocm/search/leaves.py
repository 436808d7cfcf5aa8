"""Leaves of the Python search (a mixin of `core.Search`): lc0's ExtendNode
and ProcessPickedTask (game ends by rule, tablebase probes, NN cache hits,
network requests) and FetchSingleNodeResult (priors as lc0 computes and
stores them, root noise, the contempt rescaling of a fresh value)."""
from __future__ import annotations

import chess
import numpy as np

from lc0_rocm.search import contempt
from lc0_rocm.search.batch import Visit
from lc0_rocm.search.fastmath import compress_key, compress_priors, fast_exp
from lc0_rocm.search.positions import PositionWalker, has_mating_material
from lc0_rocm.search.tree import DRAW, LOSS, TABLEBASE, TWO_FOLD, WIN


class LeavesMixin:
    """Needs the Search's tree, walker, evaluator, cache, params and batch."""

    # Leaves (lc0's ExtendNode + ProcessPickedTask)

    def _visit(self, node: int, depth: int) -> None:
        """A real visit of `node` (walker at node): extend it and queue it for
        the network, or complete it out of order (terminal, cache hit)."""
        tree = self.tree
        visit = Visit(node, depth)
        self.batch.append(visit)
        if tree.terminal[node] or tree.n[node] > 0:
            visit.q, visit.d, visit.m = tree.wl[node], tree.d[node], tree.m[node]
            visit.ooo_done = self.params.OutOfOrderEval
            return
        walker = self.walker
        board = walker.board
        key = (walker.keys[-1], walker.repetitions[-1])
        cached = self.cache.get(key) if self.cache is not None else None
        # A cached position brings its legal moves: no move generation.
        moves = cached[0] if cached is not None else list(board.legal_moves)
        if not self._extend_terminal(node, depth, board, walker, moves):
            if cached is not None:
                moves, priors, q, d, m = cached
                tree.create_edges(node, moves)
                order = list(range(len(moves)))
                if node == 0 and self.params.DirichletNoiseEpsilon:
                    order, priors = self._root_noise(order, priors)
                tree.set_priors(node, order, priors)
                visit.q, visit.d, visit.m = -q, d, m
                if self.rescale_on:
                    self._rescale(visit)
                visit.ooo_done = self.params.OutOfOrderEval
                return
            moves, request = self.evaluator.prepare(board, walker, moves)
            tree.create_edges(node, moves)
            visit.moves = moves
            visit.key = key
            visit.nn_slot = len(self.nn_requests)
            self.nn_requests.append(request)
            return
        visit.q, visit.d, visit.m = tree.wl[node], tree.d[node], tree.m[node]
        visit.ooo_done = self.params.OutOfOrderEval

    def _extend_terminal(self, node: int, depth: int, board: chess.Board,
                         walker: PositionWalker, moves: list) -> bool:
        """Mark `node` terminal when the game ends there (lc0's ExtendNode
        rules); True when it did."""
        tree = self.tree
        if not moves:
            tree.make_terminal(node, WIN if board.is_check() else DRAW)
            return True
        if node == 0:
            return False   # draws by rule are what the root search is about
        if not has_mating_material(board) or walker.rule50[-1] >= 100:
            tree.make_terminal(node, DRAW)
            return True
        reps = walker.repetitions[-1]
        if reps >= 2:
            tree.make_terminal(node, DRAW)
            return True
        plies = depth - 1
        if (reps == 1 and plies >= 4 and self.params.TwoFoldDraws
                and plies >= walker.cycle[-1]):
            tree.make_terminal(node, DRAW, float(walker.cycle[-1]), TWO_FOLD)
            return True
        if (self.tablebase is not None and not board.castling_rights and walker.rule50[-1] == 0
                and chess.popcount(board.occupied) <= self.tb_max_pieces):
            wdl = self.tablebase.get_wdl(board)
            if wdl is not None:
                # No network value here: plies left from the parent, like lc0.
                m = max(0.0, tree.m[tree.parent[node]] - 1.0)
                # Side to move at the node wins -> the mover into it loses.
                # Cursed wins and blessed losses (+-1) count as draws.
                result = LOSS if wdl == 2 else WIN if wdl == -2 else DRAW
                tree.make_terminal(node, result, m, TABLEBASE)
                self.tb_hits += 1
                return True
        return False

    def _priors_batch(self, logits_list):
        """Per position: (edge order, stored priors): priors =
        softmax(logits / PolicyTemperature) as lc0 computes it (max
        subtracted, FastExp, float32) and stores it (16 bits); edges sorted
        by stored prior, highest first, ties in move-generation order.
        One vectorised pass over the whole batch."""
        sizes = [len(x) for x in logits_list]
        out = [([], [])] * len(sizes)
        live = [i for i, k in enumerate(sizes) if k]
        if not live:
            return out
        lens = np.array([sizes[i] for i in live])
        flat = np.concatenate([np.asarray(logits_list[i], dtype=np.float32) for i in live])
        starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
        maxes = np.maximum.reduceat(flat, starts)
        e = fast_exp((flat - np.repeat(maxes, lens)) * np.float32(self.inv_policy_temp))
        totals = np.add.reduceat(e.astype(np.float64), starts).astype(np.float32)
        scale = np.where(totals > 0, np.float32(1) / np.where(totals > 0, totals, 1), np.float32(1))
        p = (e * np.repeat(scale.astype(np.float32), lens)).astype(np.float32)
        stored = compress_priors(p).tolist()
        keys = compress_key(p).tolist()
        for i, start, k in zip(live, starts.tolist(), lens.tolist()):
            seg_keys = keys[start:start + k]
            order = sorted(range(k), key=seg_keys.__getitem__, reverse=True)
            out[i] = (order, stored[start:start + k])
        return out

    def _root_noise(self, order, stored):
        """lc0's ApplyDirichletNoise at the root: p = (1 - eps) p + eps eta,
        eta ~ Dirichlet(alpha), stored in 16 bits, edges re-sorted."""
        eps = self.params.DirichletNoiseEpsilon
        eta = np.random.default_rng().gamma(self.params.DirichletNoiseAlpha, 1.0, len(stored))
        total = eta.sum()
        if total < np.finfo(np.float32).tiny:
            return order, stored
        p = np.asarray(stored, dtype=np.float32) * np.float32(1 - eps) + (eps * eta / total).astype(np.float32)
        stored = compress_priors(p.astype(np.float32)).tolist()
        keys = compress_key(p.astype(np.float32)).tolist()
        ordered = sorted(order, key=keys.__getitem__, reverse=True)
        return ordered, stored

    def _cache_put(self, key, moves, order, stored, q, d, m) -> None:
        if self.cache is not None:
            self.cache.put(key, ([moves[k] for k in order], [stored[k] for k in order], q, d, m))

    def _rescale(self, visit: Visit) -> None:
        """lc0's WDLRescale of a fresh NN value (contempt), signed by whose
        side the node's value is from relative to the contempt side."""
        root_stm = (self.contempt_mode == contempt.BLACK) == self.root_black
        sign = 1.0 if root_stm != bool(visit.depth & 1) else -1.0
        diff = 0.0 if self.contempt_mode == contempt.NONE else self.rescale_diff
        visit.q, visit.d, _ = contempt.wdl_rescale(visit.q, visit.d, self.rescale_ratio, diff,
                                                   sign, False, self.params.WDLMaxS)

    def _apply_nn_result(self, visit: Visit, priors, q: float, d: float, m: float) -> None:
        """lc0's FetchSingleNodeResult: value flipped to the parent's view,
        priors stored, edges sorted by prior."""
        order, stored = priors
        if visit.node == 0 and self.params.DirichletNoiseEpsilon:
            order, stored = self._root_noise(order, stored)
        self.tree.set_priors(visit.node, order, stored)
        visit.q, visit.d, visit.m = -q, d, m
        if self.rescale_on:
            self._rescale(visit)
        self._cache_put(visit.key, visit.moves, order, stored, q, d, m)
