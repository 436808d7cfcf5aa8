"""lc0 v0.32.1 classic search, one thread: gather a minibatch of leaves with
multi-visit PUCT picking and in-flight visits (collisions), evaluate them in
one network call, back the values up, repeat until a stopper fires.

The hot path (pick, extend, backup) works on the flat arrays of `Tree` and
one `PositionWalker`; everything a native core would replace is in this
module, behind `Search.run_iteration()`. Stoppers (stoppers.py) and best-move
selection (selection.py) are mixed in.
"""
from __future__ import annotations

import math
import time

import chess
import numpy as np

from lc0_rocm.search import contempt
from lc0_rocm.search.fastmath import compress_key, compress_priors, fast_exp, fast_log
from lc0_rocm.search.params import SearchParams
from lc0_rocm.search.positions import PositionWalker, has_mating_material
from lc0_rocm.search.selection import SelectionMixin
from lc0_rocm.search.stoppers import StoppersMixin
from lc0_rocm.search.tree import (DRAW, END_OF_GAME, LOSS, NON_TERMINAL, TABLEBASE, TWO_FOLD,
                                  WIN, Tree)
from lc0_rocm.syzygy import max_pieces

_LOWEST = -3.4028234663852886e38
_INT_MAX = 2 ** 31 - 1


class Visit:
    """One picked leaf (lc0's NodeToProcess): a real visit or a collision."""
    __slots__ = ("node", "depth", "multivisit", "maxvisit", "collision", "nn_slot",
                 "ooo_done", "q", "d", "m", "moves", "key")

    def __init__(self, node: int, depth: int, collision: bool = False,
                 multivisit: int = 1, maxvisit: int = 0):
        self.node = node
        self.depth = depth
        self.collision = collision
        self.multivisit = multivisit
        self.maxvisit = maxvisit
        self.nn_slot = -1          # index into the NN batch, or -1
        self.ooo_done = False      # evaluated out of order (terminal or cache hit)
        self.q = self.d = self.m = 0.0
        self.moves = None
        self.key = None


class Batch:
    """One gathered minibatch: its visits (and collisions), the network
    requests, the prefetched positions, the out-of-order count."""
    __slots__ = ("visits", "requests", "prefetch", "ooo", "seconds")

    def __init__(self, visits, requests, prefetch, ooo):
        self.visits = visits
        self.requests = requests
        self.prefetch = prefetch
        self.ooo = ooo
        self.seconds = 0.0


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


class Search(StoppersMixin, SelectionMixin):
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
        self.max_limit = _INT_MAX
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

    # ------------------------------------------------------------------
    # Gathering (lc0's GatherMinibatch + PickNodesToExtend)

    def _collisions_left(self, nodes: int) -> int:
        p = self.params
        if nodes >= p.MaxCollisionVisitsScalingEnd:
            return p.MaxCollisionVisits
        if nodes <= p.MaxCollisionVisitsScalingStart:
            return 1
        ratio = ((nodes - p.MaxCollisionVisitsScalingStart)
                 / (p.MaxCollisionVisitsScalingEnd - p.MaxCollisionVisitsScalingStart)
                 ) ** p.MaxCollisionVisitsScalingPower
        return int(math.floor(1 + (p.MaxCollisionVisits - 1) * ratio + 0.5))

    def _gather_minibatch(self) -> int:
        """Fill self.batch; returns how many leaves were backed up out of order."""
        tree = self.tree
        minibatch_size = 0
        remaining = max(1, self.remaining_playouts)
        collisions_left = self._collisions_left(min(tree.n[0], remaining))
        ooo = 0
        batch = self.batch
        while minibatch_size < self.target_minibatch and ooo < self.max_out_of_order:
            if minibatch_size > 0 and not self.nn_requests:
                return ooo       # something to back up without the network: do it now
            new_start = len(batch)
            self._pick(min(collisions_left, self.target_minibatch - minibatch_size,
                           self.max_out_of_order - ooo))
            new = batch[new_start:]
            minibatch_size += sum(1 for v in new if not v.collision)
            if any(v.ooo_done for v in new):
                # Back up out-of-order results now; drop this pick's
                # collisions (they will mostly be picked again).
                kept = []
                for v in new:
                    if v.collision:
                        self._cancel_in_flight(v.node, v.multivisit)
                    elif v.ooo_done:
                        self._backup(v)
                        minibatch_size -= 1
                        ooo += 1
                    else:
                        kept.append(v)
                del batch[new_start:]
                batch.extend(kept)
                new = kept
            for v in new:
                if not v.collision:
                    continue
                if v.maxvisit > 0 and collisions_left > v.multivisit:
                    extra = min(v.maxvisit, collisions_left) - v.multivisit
                    v.multivisit += extra
                    node = tree.parent[v.node]
                    while node >= 0:
                        tree.n_in_flight[node] += extra
                        node = tree.parent[node]
                collisions_left -= v.multivisit
                if collisions_left <= 0:
                    return ooo
                if self.limits.stop is not None and self.limits.stop.is_set():
                    return ooo
        return ooo

    def _pick(self, limit: int) -> None:
        self.max_limit = _INT_MAX
        self.pick_limit = limit
        if self.root_filter or self.current_best >= 0:
            self._root_allowed = self._root_allowed_edges()
        else:
            self._root_allowed = None
        self._pick_node(0, limit, 1, True)

    def _root_allowed_edges(self):
        """Root edges the picker may choose: with few playouts left, only
        those that could still catch the best (lc0's root pruning), and only
        `searchmoves` when given."""
        tree = self.tree
        best_n = 0
        if self.current_best >= 0:
            c = tree.e_child[self.current_best]
            best_n = tree.n[c] if c >= 0 else 0
        remaining = max(1, self.remaining_playouts)
        allowed = []
        for j in tree.edges(0):
            c = tree.e_child[j]
            n = tree.n[c] if c >= 0 else 0
            ok = j == self.current_best or not remaining < best_n - n
            if ok and self.root_filter and tree.e_move[j] not in self.root_filter:
                ok = False
            allowed.append(ok)
        return allowed

    def _fpu(self, node: int, is_root: bool, draw_score: float, visited_pol: float) -> float:
        absolute, value = self.params.fpu(is_root)
        if absolute:
            return value
        tree = self.tree
        return -(tree.wl[node] - draw_score * tree.d[node]) - value * math.sqrt(visited_pol)

    def _cpuct(self, n: int, is_root: bool) -> float:
        init, base, factor = self.params.cpuct(is_root)
        return init + (factor * fast_log((n + base) / base) if factor else 0.0)

    def _pick_node(self, node: int, limit: int, depth: int, is_root: bool) -> None:
        """Send `limit` visits into `node` (walker is at node; depth 1 = root)."""
        tree = self.tree
        n_arr, nif, term = tree.n, tree.n_in_flight, tree.terminal
        if n_arr[node] == 0 or term[node]:
            if is_root and self._try_start(node):
                limit -= 1
                self._visit(node, depth)
            if limit > 0:
                max_count = self.max_limit if (limit == self.pick_limit and self.max_limit > limit) else 0
                self.batch.append(Visit(node, depth, True, limit, max_count))
            return
        if is_root:
            nif[node] += limit

        first = tree.first_edge[node]
        num_edges = tree.num_edges[node]
        if is_root and self.root_filter:
            max_needed = num_edges
        else:
            max_needed = min(num_edges, n_arr[node] + nif[node] + limit + 2)
        e_p, e_child = tree.e_p, tree.e_child
        wl, d_arr = tree.wl, tree.d
        pol = e_p[first:first + max_needed]
        draw_score = self.draw_score_odd if depth % 2 == 0 else self.draw_score_even

        util = [None] * max_needed
        nstarted = [0] * max_needed
        visited_pol = 0.0
        m_eval = self._m_evaluator(node) if self.has_mlh else None
        for k in range(num_edges):
            c = e_child[first + k]
            if c < 0:
                continue
            if k < max_needed:
                nstarted[k] = n_arr[c] + nif[c]
            if n_arr[c] > 0:
                visited_pol += e_p[first + k]
                if k < max_needed:
                    q = wl[c] + draw_score * d_arr[c]
                    util[k] = q + (m_eval(c, q) if m_eval else 0.0)
        fpu = self._fpu(node, is_root, draw_score, visited_pol)
        util = [fpu if u is None else u for u in util]

        cpuct = self._cpuct(n_arr[node], is_root)
        puct_mult = cpuct * math.sqrt(max(n_arr[node] - 1, 1))
        score = [pol[k] * puct_mult / (1 + nstarted[k]) + util[k] for k in range(max_needed)]
        allowed = self._root_allowed if is_root else None
        visits_to_perform = [0] * max_needed
        walker = self.walker

        while limit > 0:
            best = _LOWEST
            second = _LOWEST
            best_idx = -1
            best_without_u = _LOWEST
            have_second = False
            can_exit = False
            for idx in range(max_needed):
                if allowed is not None and not allowed[idx]:
                    continue
                s = score[idx]
                if s > best:
                    if best_idx >= 0:
                        have_second = True
                    second = best
                    best = s
                    best_idx = idx
                    best_without_u = util[idx]
                elif s > second:
                    second = s
                    have_second = True
                if can_exit:
                    break
                if nstarted[idx] == 0:
                    can_exit = True   # edges are sorted by prior: one more suffices
            if best_idx < 0:
                break
            if have_second:
                estimated = _INT_MAX
                if best_without_u < second:
                    n1 = nstarted[best_idx] + 1
                    estimated = int(max(1.0, min(
                        pol[best_idx] * puct_mult / (second - best_without_u) - n1 + 1, 1e9)))
                if estimated < self.max_limit:
                    self.max_limit = estimated
                new_visits = min(limit, estimated)
            else:
                new_visits = limit
            visits_to_perform[best_idx] += new_visits
            limit -= new_visits
            child = tree.child(node, best_idx)
            if term[child] == TWO_FOLD:
                self._ensure_two_fold_correct(child, depth)
            started = False
            if self._try_start(child):
                nstarted[best_idx] += 1
                new_visits -= 1
                started = True
                if n_arr[child] > 0 and not term[child]:
                    nif[child] += new_visits
                    nstarted[best_idx] += new_visits
                score[best_idx] = pol[best_idx] * puct_mult / (1 + nstarted[best_idx]) + util[best_idx]
            if started and (n_arr[child] == 0 or term[child]):
                visits_to_perform[best_idx] -= 1
                walker.push(tree.e_move[first + best_idx])
                self._visit(child, depth + 1)
                walker.pop()

        for idx in range(max_needed):
            k = visits_to_perform[idx]
            if k > 0:
                child = tree.child(node, idx)
                if n_arr[child] == 0 or term[child]:
                    # Only a collision can happen there: no need for the board.
                    self._pick_node(child, k, depth + 1, False)
                    continue
                walker.push(tree.e_move[first + idx])
                self._pick_node(child, k, depth + 1, False)
                walker.pop()

    def _try_start(self, node: int) -> bool:
        tree = self.tree
        if tree.n[node] == 0 and tree.n_in_flight[node] > 0:
            return False
        tree.n_in_flight[node] += 1
        return True

    def _m_evaluator(self, parent: int):
        """lc0's MEvaluator for children of `parent`: a utility that prefers
        shorter wins and longer losses; None when the parent's |Q| is below
        the threshold."""
        tree = self.tree
        p = self.params
        threshold = p.MovesLeftThreshold
        if not abs(tree.wl[parent]) > threshold:
            return None
        parent_m = tree.m[parent]
        slope, cap = p.MovesLeftSlope, p.MovesLeftMaxEffect
        a_c, a_l, a_s = p.MovesLeftConstantFactor, p.MovesLeftScaledFactor, p.MovesLeftQuadraticFactor
        m_arr = tree.m

        def utility(child: int, q: float) -> float:
            m = min(max(slope * (m_arr[child] - parent_m), -cap), cap)
            m *= math.copysign(1.0, -q)
            if 0.0 < threshold < 1.0:
                q = max(0.0, abs(q) - threshold) / (1.0 - threshold)
            return m * (a_c + a_l * abs(q) + a_s * q * q)
        return utility

    def _ensure_two_fold_correct(self, child: int, depth: int) -> None:
        """A two-fold draw whose first occurrence lies before the (new) root
        is no draw now: undo its visits and make it searchable again."""
        tree = self.tree
        if not (tree.terminal[child] == TWO_FOLD and depth < tree.m[child]):
            return
        wl, d, m, visits = tree.wl[child], tree.d[child], tree.m[child], tree.n[child]
        counter = 0
        node = child
        while node >= 0:
            tree.revert_terminal_visits(node, wl, d, m + counter, visits)
            counter += 1
            if counter > depth:
                break
            node = tree.parent[node]
        tree.make_not_terminal(child)
        self.initial_visits -= visits

    # ------------------------------------------------------------------
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

    # ------------------------------------------------------------------
    # Prefetch (lc0's PrefetchIntoCache): when the batch is small, add the
    # leaves the search will most likely want next; they only fill the cache.

    def _stop_requested(self) -> bool:
        return self.stopped or (self.limits.stop is not None and self.limits.stop.is_set())

    def _prefetch(self, node: int, budget: int, is_odd_depth: bool, is_root: bool) -> int:
        if budget <= 0:
            return 0
        tree = self.tree
        walker = self.walker
        if node < 0 or tree.n[node] + tree.n_in_flight[node] == 0:
            key = (walker.keys[-1], walker.repetitions[-1])
            if self.cache is not None and self.cache.get(key, count=False) is not None:
                return 1
            moves, request = self.evaluator.prepare(walker.board, walker)
            self.prefetch.append((len(self.nn_requests), moves, key))
            self.nn_requests.append(request)
            return 1
        if tree.n[node] == 0 or tree.terminal[node]:
            return 0
        draw_score = self.draw_score_odd if is_odd_depth else self.draw_score_even
        n_arr, nif, wl, d_arr = tree.n, tree.n_in_flight, tree.wl, tree.d
        puct_mult = self._cpuct(n_arr[node], is_root) * math.sqrt(max(n_arr[node] - 1, 1))
        fpu = self._fpu(node, is_root, draw_score, tree.visited_policy(node))
        scored = []
        for j in tree.edges(node):
            c = tree.e_child[j]
            nstarted = n_arr[c] + nif[c] if c >= 0 else 0
            q = wl[c] + draw_score * d_arr[c] if c >= 0 and n_arr[c] > 0 else fpu
            scored.append((-(tree.e_p[j] * puct_mult / (1 + nstarted)) - q, j))
        scored.sort(key=lambda t: t[0])
        total = 0
        budget_to_spend = budget
        for i, (_, j) in enumerate(scored):
            if budget <= 0:
                break
            c = tree.e_child[j]
            if i != len(scored) - 1:
                next_score = -scored[i + 1][0]
                # lc0 uses -fpu as the default here (a quirk kept for parity).
                q = wl[c] + draw_score * d_arr[c] if c >= 0 and n_arr[c] > 0 else -fpu
                if next_score > q:
                    nstarted = n_arr[c] + nif[c] if c >= 0 else 0
                    budget_to_spend = min(budget, int(tree.e_p[j] * puct_mult / (next_score - q)
                                                      - nstarted) + 1)
                else:
                    budget_to_spend = budget
            if budget_to_spend <= 0 or (c >= 0 and n_arr[c] + nif[c] > 0
                                        and (n_arr[c] == 0 or tree.terminal[c])):
                continue     # spends nothing there: skip the board move
            walker.push(tree.e_move[j])
            spent = self._prefetch(c, budget_to_spend, not is_odd_depth, False)
            walker.pop()
            budget -= spent
            total += spent
        return total

    # ------------------------------------------------------------------
    # Backup (lc0's DoBackupUpdateSingleNode + MaybeSetBounds)

    def _cancel_in_flight(self, node: int, visits: int) -> None:
        tree = self.tree
        node = tree.parent[node]
        while node >= 0:
            tree.n_in_flight[node] -= visits
            node = tree.parent[node]

    def _backup(self, visit: Visit) -> None:
        tree = self.tree
        wl, d_arr, m_arr, n_arr, nif, term, parent = (
            tree.wl, tree.d, tree.m, tree.n, tree.n_in_flight, tree.terminal, tree.parent)
        node = visit.node
        mv = visit.multivisit
        update_bounds = self.params.StickyEndgames and term[node] != NON_TERMINAL and n_arr[node] == 0
        v, d, m = visit.q, visit.d, visit.m
        n_to_fix = 0
        v_delta = d_delta = m_delta = 0.0
        while True:
            p = parent[node]
            if term[node]:
                v, d, m = wl[node], d_arr[node], m_arr[node]
            n_new = n_arr[node] + mv
            wl[node] += mv * (v - wl[node]) / n_new
            d_arr[node] += mv * (d - d_arr[node]) / n_new
            m_arr[node] += mv * (m - m_arr[node]) / n_new
            n_arr[node] = n_new
            nif[node] -= mv
            if n_to_fix > 0 and not term[node]:
                wl[node] += n_to_fix * v_delta / n_new
                d_arr[node] += n_to_fix * d_delta / n_new
                m_arr[node] += n_to_fix * m_delta / n_new
            if p < 0:
                break
            old_update_bounds = update_bounds
            if term[p]:
                n_to_fix = 0
            if update_bounds and p != 0 and not term[p]:
                fixed = self._maybe_set_bounds(p, m)
                update_bounds = fixed is not None
                if fixed is not None and fixed[0] is not None:
                    n_to_fix, v_delta, d_delta, m_delta = fixed
            else:
                update_bounds = False
            v = -v
            v_delta = -v_delta
            m += 1
            if p == 0:
                best_c = tree.e_child[self.current_best] if self.current_best >= 0 else -1
                best_n = n_arr[best_c] if best_c >= 0 else 0
                if (old_update_bounds and term[node]) or (node != best_c and best_n <= n_arr[node]):
                    self._update_current_best()
            node = p
        self.total_playouts += mv
        self.cum_depth += visit.depth * mv
        if visit.depth > self.max_depth:
            self.max_depth = visit.depth

    def _maybe_set_bounds(self, p: int, m: float):
        """Certainty propagation. None: parent stays a regular node. Else a
        tuple (n_to_fix, v_delta, d_delta, m_delta) when the parent became
        terminal, (None,) * 4 when only its bounds changed."""
        tree = self.tree
        losing_m = 0.0
        prefer_tb = False
        lower = upper = LOSS
        for j in tree.edges(p):
            c = tree.e_child[j]
            if c >= 0:
                e_lower, e_upper = tree.lower[c], tree.upper[c]
                is_tb = tree.terminal[c] == TABLEBASE
            else:
                e_lower, e_upper, is_tb = LOSS, WIN, False
            lower = max(lower, e_lower)
            upper = max(upper, e_upper)
            if e_lower == WIN and not is_tb:
                prefer_tb = False
                break
            elif e_upper == LOSS:
                losing_m = max(losing_m, tree.m[c] if c >= 0 and tree.n[c] > 0 else 0.0)
            prefer_tb = prefer_tb or is_tb
        if lower == LOSS and upper == WIN:
            return None
        if lower == upper:
            n_to_fix = tree.n[p]
            cur_v, cur_d, cur_m = tree.wl[p], tree.d[p], tree.m[p]
            plies = (max(losing_m, m) if upper == LOSS else m) + 1.0
            tree.make_terminal(p, -upper, plies, TABLEBASE if prefer_tb else END_OF_GAME)
            return (n_to_fix, -(tree.wl[p] - cur_v), tree.d[p] - cur_d, tree.m[p] - cur_m)
        tree.lower[p], tree.upper[p] = -upper, -lower
        return (None, None, None, None)
