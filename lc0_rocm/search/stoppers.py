"""lc0's stoppers for the search (v0.32.1 search/classic/stoppers/): visits
or playouts, time, depth, mate, KLD gain and smart pruning, plus the hints
(remaining playouts) they leave for picking. A mixin of `core.Search`."""
from __future__ import annotations

import math
import time

from lc0_rocm.search.tree import END_OF_GAME


class StoppersMixin:
    """Needs the Search's tree, params, limits and counters."""

    def _stoppers_fire(self) -> bool:
        p = self.params
        limits = self.limits
        smart = p.SmartPruningFactor > 0 and not limits.infinite
        node_limit = limits.nodes if limits.nodes is not None else 4_000_000_000
        counted = self.total_nodes
        if limits.nodes is not None and p.NodesAsPlayouts:
            counted = self.total_playouts            # lc0's PlayoutsStopper
        if smart:
            self._hint_playouts(node_limit - counted)
        if counted >= node_limit:
            return True
        now = self.elapsed_ms()
        for budget, hard in ((limits.movetime, True), (limits.time_budget, False)):
            if budget is not None and not limits.infinite:
                self.remaining_time_ms = min(self.remaining_time_ms, budget * 1000.0 - now)
                if now >= budget * 1000.0:
                    return True
                # lc0 answers from its watchdog while a batch computes; we
                # cannot, so a hard limit also stops before a batch that
                # would overrun it (judged by the last batch's duration).
                if hard and self.pending_nn() and now + self.last_batch_ms >= budget * 1000.0:
                    return True
        if limits.depth is not None and self.cum_depth // max(self.total_playouts, 1) >= limits.depth:
            return True
        if limits.mate is not None and self._mate_depth() <= limits.mate:
            return True
        if limits.infinite:
            return False
        if p.MinimumKLDGainPerNode > 0 and self._kld_gain_too_small():
            return True
        if not smart:
            return False
        return self._smart_pruning_fires(now)

    def _kld_gain_too_small(self) -> bool:
        """lc0's KldGainStopper: every KLDGainAverageInterval nodes, stop when
        the root visit distribution moved less than MinimumKLDGainPerNode
        (Kullback-Leibler divergence per node)."""
        child_nodes = self.total_nodes - 1.0
        if child_nodes < self._kld_prev_nodes + self.params.KLDGainAverageInterval:
            return False
        visits = self._root_edge_stats()[0]
        if self._kld_prev_visits:
            gain = 0.0
            for old, new in zip(self._kld_prev_visits, visits):
                if old:
                    o_p = old / self._kld_prev_nodes
                    n_p = new / child_nodes
                    gain += o_p * math.log(o_p / n_p)
            if gain / (child_nodes - self._kld_prev_nodes) < self.params.MinimumKLDGainPerNode:
                return True
        self._kld_prev_visits = visits
        self._kld_prev_nodes = child_nodes
        return False

    def throttle(self) -> None:
        """lc0's NpsLimit: wait while the search runs faster than allowed."""
        limit = self.params.NpsLimit
        if limit <= 0 or self.nps_start_time is None:
            return
        while not self._stop_requested():
            since = time.monotonic() - self.nps_start_time
            if since <= 0 or self.total_playouts / since <= limit:
                return
            time.sleep(0.001)

    def _mate_depth(self) -> float:
        """Moves to the shortest proven mate among the root's edges."""
        tree = self.tree
        best = math.inf
        for j in tree.edges(0):
            c = tree.e_child[j]
            if (c >= 0 and tree.n[c] > 0 and tree.terminal[c] == END_OF_GAME
                    and tree.wl[c] == 1.0):
                best = min(best, int(math.floor(tree.m[c] + 0.5)) // 2 + 1)
        return best

    def _hint_playouts(self, value) -> None:
        if value < self.remaining_playouts:
            self.remaining_playouts = value

    def _root_edge_stats(self):
        """(edge visit counts, win found, losing edges, may resign)."""
        tree = self.tree
        edge_n = []
        win_found = False
        losing = 0
        may_resign = True
        if tree.n[0] == 0:
            return edge_n, win_found, losing, may_resign
        draw_score = self.draw_score_odd
        for j in tree.edges(0):
            c = tree.e_child[j]
            n = tree.n[c] if c >= 0 else 0
            edge_n.append(n)
            if n > 0:
                q = tree.wl[c] + draw_score * tree.d[c]
                if tree.terminal[c] and tree.wl[c] > 0:
                    win_found = True
                if tree.terminal[c] and tree.wl[c] < 0:
                    losing += 1
                if q > -0.98:
                    may_resign = False
        return edge_n, win_found, losing, may_resign

    def _smart_pruning_fires(self, now_ms: float) -> bool:
        """lc0's SmartPruningStopper (last in the chain)."""
        edge_n, win_found, losing, may_resign = self._root_edge_stats()
        if len(edge_n) == 1:
            return True          # only one legal move
        if len(edge_n) <= losing + (0 if may_resign else 1):
            return True          # at most one non-losing move
        if win_found:
            return True
        if self.total_playouts > 0 and self.first_eval_time_ms is None:
            self.first_eval_time_ms = now_ms
            return False
        if self.first_eval_time_ms is None or not edge_n:
            return False
        if now_ms < self.first_eval_time_ms + 200:     # kSmartPruningToleranceMs
            return False
        nodes = self.total_playouts + 300               # kSmartPruningToleranceNodes
        elapsed = int(now_ms - self.first_eval_time_ms)
        nps = 1000 * nodes // max(elapsed, 1) + 1
        factor = self.params.SmartPruningFactor
        remaining = min(self.remaining_time_ms / 1000.0 * nps / factor,
                        max(1, self.remaining_playouts) / factor)
        if remaining != math.inf:
            self._hint_playouts(int(remaining))
        if self.total_batches < self.params.SmartPruningMinimumBatches:
            return False
        largest = second = 0
        for n in edge_n:
            if n > largest:
                largest, second = n, largest
            elif n > second:
                second = n
        return remaining < largest - second
