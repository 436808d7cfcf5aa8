"""lc0 v0.32.1 classic search, one thread: gather a minibatch of leaves with
multi-visit PUCT picking and in-flight visits (collisions), evaluate them in
one network call, back the values up, repeat until a stopper fires.

The hot path (pick, extend, backup) works on the flat arrays of `Tree` and
one `PositionWalker`. This module holds the search's state and its phases
(`Search.run_iteration()`, or gather / evaluate / finish for the pipelined
engine); the work of each phase is mixed in: picking and prefetch
(picking.py), leaves (leaves.py), backup (backup.py), stoppers
(stoppers.py) and best-move selection (selection.py).
"""
from __future__ import annotations

import math
import time

import chess

from lc0_rocm.search import contempt
from lc0_rocm.search.backup import BackupMixin
from lc0_rocm.search.batch import Batch, Visit
from lc0_rocm.search.leaves import LeavesMixin
from lc0_rocm.search.params import SearchParams
from lc0_rocm.search.picking import INT_MAX, PickingMixin
from lc0_rocm.search.positions import PositionWalker
from lc0_rocm.search.selection import SelectionMixin
from lc0_rocm.search.stoppers import StoppersMixin
from lc0_rocm.search.tree import Tree
from lc0_rocm.syzygy import max_pieces

__all__ = ["Limits", "Search"]


class Limits:
    """What ends a search: nodes (lc0 counts the reused tree too), hard time
    in seconds, a soft time budget, infinite, an external stop event."""

    def __init__(self, nodes=None, movetime=None, time_budget=None, infinite=False,
                 stop=None, searchmoves=None, depth=None, mate=None):
        self.nodes = nodes
        self.depth = depth          # lc0's DepthStopper: average depth reached
        self.mate = mate            # lc0's MateStopper: a mate in <= this many moves found
        self.movetime = movetime
        self.time_budget = time_budget
        self.infinite = infinite
        self.stop = stop
        self.searchmoves = list(searchmoves or [])


class Search(PickingMixin, LeavesMixin, BackupMixin, StoppersMixin, SelectionMixin):
    """One search from the root of `tree` at the position of `walker`."""

    def __init__(self, tree: Tree, walker: PositionWalker, evaluator, cache,
                 params: SearchParams, limits: Limits, minibatch_size: int,
                 tablebase=None):
        self.tree = tree
        # Syzygy WDL probing inside the tree (python-chess Tablebase or any
        # object with get_wdl(board) -> int | None).
        self.tablebase = tablebase
        self.tb_max_pieces = max_pieces(tablebase) if tablebase is not None else 0
        self.tb_hits = 0
        self.walker = walker
        self.evaluator = evaluator
        self.cache = cache
        self.params = params
        self.limits = limits
        self.has_mlh = bool(evaluator.has_moves_left)
        self.target_minibatch = max(1, minibatch_size)
        self.max_out_of_order = max(1, int(params.MaxOutOfOrderEvalsFactor * self.target_minibatch))
        self.inv_policy_temp = 1.0 / params.PolicyTemperature
        root_black = walker.board.turn == chess.BLACK
        ds = params.DrawScore
        # lc0's GetDrawScore(is_odd_depth).
        self.draw_score_even = -ds if root_black else ds
        self.draw_score_odd = ds if root_black else -ds
        self.root_filter = set(limits.searchmoves)
        self.root_black = root_black
        # Contempt: lc0's WDL rescaling of every NN value (off by default).
        self.rescale_ratio, self.rescale_diff = contempt.rescale_params(params)
        self.contempt_mode = contempt.resolve_mode(params, root_black, limits.infinite)
        self.rescale_on = self.rescale_ratio != 1.0 or (
            self.rescale_diff != 0.0 and self.contempt_mode != contempt.NONE)

        self.start_time = time.monotonic()
        self.nps_start_time = None
        self.initial_visits = tree.n[0]
        self.total_playouts = 0
        self.total_batches = 0
        self.cum_depth = 0
        self.max_depth = 0
        self.nn_evals = 0
        self.stopped = False
        # Stopper hints (lc0's StoppersHints) and smart-pruning state.
        self.remaining_playouts = 4_000_000_000
        self.remaining_time_ms = math.inf
        self.first_eval_time_ms = None
        self.last_batch_ms = 0.0
        self.nn_pending = 0          # gathered batches waiting for the network
        self._kld_prev_visits: list[int] = []
        self._kld_prev_nodes = 0.0
        self.current_best = -1                      # root edge id, or -1
        self._update_current_best()
        # Per-pick state.
        self.batch: list[Visit] = []
        self.nn_requests: list = []
        self.max_limit = INT_MAX
        self.pick_limit = 0

    # ------------------------------------------------------------------
    # Top level

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.start_time) * 1000.0

    @property
    def total_nodes(self) -> int:
        return self.total_playouts + self.initial_visits

    def run_iteration(self) -> bool:
        """lc0's SearchWorker::ExecuteOneIteration for one thread; True when
        the search is to stop.

        lc0 also checks its stoppers from a watchdog thread, which mostly runs
        while the network computes: a limit reached by the out-of-order
        backups of the gather stops the search before that batch's results
        land (lc0 reports bestmove right then). We check at the same point
        and abandon the pending batch, so results match lc0's report.
        """
        batch = self.gather_batch()
        if self.stops_midway(batch):
            self.abandon(batch)
            return True
        self.add_prefetch(batch)
        return self.finish(batch, self.evaluate(batch))

    # The phases of an iteration, also used by the two-thread pipeline
    # (Engine with Threads >= 2), which gathers the next batch while the
    # network computes this one.

    def gather_batch(self) -> Batch:
        """Pick leaves (out-of-order ones are backed up already)."""
        self.batch = []
        self.nn_requests = []
        self.prefetch = []
        ooo = self._gather_minibatch()
        batch = Batch(self.batch, self.nn_requests, self.prefetch, ooo)
        self.nn_pending += 1 if batch.requests else 0
        return batch

    def add_prefetch(self, batch: Batch) -> None:
        if 0 < len(batch.requests) < self.params.MaxPrefetch and not self._stop_requested():
            self.batch, self.nn_requests, self.prefetch = batch.visits, batch.requests, batch.prefetch
            self._prefetch(0, self.params.MaxPrefetch - len(batch.requests), False, True)

    def evaluate(self, batch: Batch) -> list:
        """The network call (touches no tree state: may run in another thread)."""
        if not batch.requests:
            return []
        started = time.monotonic()
        results = self.evaluator.run(batch.requests)
        batch.seconds = time.monotonic() - started
        return results

    def finish(self, batch: Batch, results: list) -> bool:
        """Back up a computed batch; True when the search is to stop."""
        if results:
            self.last_batch_ms = batch.seconds * 1000.0
            self.nn_pending -= 1
        self.nn_evals += len(results)
        priors = self._priors_batch([r[0] for r in results])
        work_done = batch.ooo > 0
        for visit in batch.visits:
            if visit.collision:
                continue
            work_done = True
            if visit.nn_slot >= 0:
                _, q, d, m = results[visit.nn_slot]
                self._apply_nn_result(visit, priors[visit.nn_slot], q, d, m)
            self._backup(visit)
        for slot, moves, key in batch.prefetch:
            _, q, d, m = results[slot]
            order, stored = priors[slot]
            self._cache_put(key, moves, order, stored, q, d, m)
        for visit in batch.visits:
            if visit.collision:
                self._cancel_in_flight(visit.node, visit.multivisit)
        if work_done:
            self.total_batches += 1
        if self.nps_start_time is None and self.total_playouts > 0:
            self.nps_start_time = time.monotonic()
        stop = self.should_stop()
        if not stop:
            self.throttle()
        return stop

    def pending_nn(self) -> bool:
        """A gathered batch is waiting for the network."""
        return self.nn_pending > 0

    def stops_midway(self, batch: Batch) -> bool:
        """The watchdog's view: the stopper chain on the state after the
        gather, with its own hints (the worker's stay as they were)."""
        if not batch.requests:
            return False
        saved = self.remaining_playouts, self.remaining_time_ms
        stop = self.should_stop()
        self.remaining_playouts, self.remaining_time_ms = saved
        return stop

    def abandon(self, batch: Batch) -> None:
        """Undo the pending network visits and collisions of a batch."""
        tree = self.tree
        if batch.requests:
            self.nn_pending -= 1
        for visit in batch.visits:
            if visit.collision:
                self._cancel_in_flight(visit.node, visit.multivisit)
            elif visit.nn_slot >= 0:
                node = visit.node
                tree.n_in_flight[node] -= 1
                self._cancel_in_flight(node, 1)
                tree.first_edge[node] = -1
                tree.num_edges[node] = 0
            else:
                self._backup(visit)

    def should_stop(self) -> bool:
        """lc0's PopulateCommonIterationStats + stopper chain; also updates
        the hints that picking and the next gather use."""
        if self.stopped:
            return True
        self.remaining_playouts = 4_000_000_000
        self.remaining_time_ms = math.inf
        if self.total_nodes == 0:
            return False
        if self.limits.stop is not None and self.limits.stop.is_set():
            self.stopped = True
            return True
        if self._stoppers_fire():
            self.stopped = True
        return self.stopped
