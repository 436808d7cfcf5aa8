"""Python API for search without UCI: `Engine(network).search(board, ...)`.

    import chess, lc0_rocm
    net = lc0_rocm.load_network("maia-1900.pb.gz", backend="cpu")
    engine = lc0_rocm.Engine(net, MultiPV=3)          # knobs by lc0's UCI names
    result = engine.search(chess.Board(), nodes=800)
    print(result.best_move, result.wdl, [line.score_cp for line in result.lines])

The Engine keeps one game's tree (reused when the next position continues
the game) and the NN cache; `lc0_rocm.search` does the searching.
"""
from __future__ import annotations

import math
import numbers
import sys
import threading
import time
from typing import TYPE_CHECKING, Callable

import chess

from lc0_rocm.backends import cpu
from lc0_rocm.backends.base import BackendAttributes
from lc0_rocm.errors import ClosedError, InvalidArgumentError
from lc0_rocm.limits import MAX_INT32, MOVETIME_LIMIT_S, check_nodes, check_seconds
from lc0_rocm.search.core import Limits, Search
from lc0_rocm.search.evaluator import NetworkEvaluator, NNCache
from lc0_rocm.search.native import RootEdge, Snapshot
from lc0_rocm.search.params import OPTIONS, OptionSpec, SearchParams, option_name
from lc0_rocm.search import contempt
from lc0_rocm.search.score import mate_score, score_cp, wdl_permille
from lc0_rocm.search.tree import TABLEBASE, Tree
from lc0_rocm.search_results import MoveStats, SearchInfo, SearchResult, wdl_probabilities

if TYPE_CHECKING:
    from lc0_rocm.network import Network

__all__ = ["Engine", "SearchInfo", "SearchResult", "MoveStats", "OptionSpec"]

INFO_INTERVAL_S = 0.5

# A GPU search gathers up to twice the backend's recommended batch (lc0's
# cuda backend recommends 2 x the multiprocessors, 264 on an H100 or H200,
# which lc0 takes as its minibatch). Measured on an H100 (BENCHMARKS.md,
# "how the search's defaults were chosen"): 512-1024 against 264 in turns, nodes/s
# +7-10 % on t82, bt4 and maia-1900, as fewer gatherings end at the target
# before the collision budget or an idle network ends them.
GPU_MINIBATCH_FACTOR = 2


def default_minibatch(attributes: BackendAttributes) -> int:
    """The search's minibatch when MinibatchSize is 0: the backend's
    recommended batch (cpu 7, as lc0's eigen), on a GPU GPU_MINIBATCH_FACTOR
    times it, at most the backend's largest batch."""
    batch = attributes.recommended_batch_size
    if not attributes.runs_on_cpu:
        batch = min(GPU_MINIBATCH_FACTOR * batch, attributes.maximum_batch_size)
    return int(batch)


class Engine:
    """lc0-style MCTS over one network. Not thread-safe: one search at a
    time; another thread may only set the `stop` event."""

    # A movetime or time_budget above this many seconds is refused as a
    # likely millisecond value (None: no bound; the UCI engine, whose times
    # come in milliseconds and are converted, sets None).
    movetime_limit_s: float | None = MOVETIME_LIMIT_S

    OPTIONS: dict[str, OptionSpec] = OPTIONS

    def __init__(self, network: Network, *, implementation: str | None = None, warm: bool = True,
                 **options: object) -> None:
        """`network`: a loaded Network (lc0_rocm.load_network). `options`:
        search knobs by lc0's UCI names (Threads, MinibatchSize, CPuct,
        MultiPV, NNCacheSize, ...); ValueError for unknown names or values.
        `implementation`: None picks the native search when the native core
        is available (else the Python search, with a one-line notice on
        stderr); "native" insists on it; "reference" runs the Python search
        (lc0_rocm.search.core), which the native one is tested against.
        `warm`: False leaves a GPU backend's first-use costs to the first
        search (an Engine that only holds options, as analysis's)."""
        if implementation not in (None, "native", "reference"):
            raise InvalidArgumentError(f"implementation must be 'native' or 'reference', got {implementation!r}")
        self.params = SearchParams()
        for name, value in options.items():
            self.set_option(name, value)
        self._implementation = implementation
        self._native = None
        self._network = None
        self._evaluator = None
        self._cache = NNCache(self.params.NNCacheSize)
        self._tree: Tree | None = None
        self._tree_start: str | None = None
        self._tree_moves: list[chess.Move] = []
        self._lock = threading.Lock()
        self._tablebase = None
        self._warm = bool(warm)
        self.set_network(network)

    # ------------------------------------------------------------------
    def set_option(self, name: str, value) -> None:
        """Set a search knob by its lc0 UCI name; ValueError when the name is
        unknown or the value does not fit."""
        self.params.set(name, value)
        canonical = option_name(name)
        if canonical == "NNCacheSize" and hasattr(self, "_cache"):
            self._cache = NNCache(self.params.NNCacheSize)

    def set_network(self, network) -> None:
        if not (hasattr(network, "forward") or hasattr(network, "forward_packed")
                or (hasattr(network, "prepare") and hasattr(network, "run"))):
            raise TypeError(f"Engine needs a network from lc0_rocm.load_network(...), got {network!r}")
        self._network = network
        self._evaluator = (network if hasattr(network, "prepare") and hasattr(network, "run")
                           else NetworkEvaluator(network))
        self._native = self._native_search_for(network)
        self.new_game()
        self.warm_up()

    def warm_up(self) -> None:
        """Pay a GPU backend's first-use costs (its products' algorithm
        timing, its streams' graphs) for the batch sizes a search sends, now
        rather than in the first searches: done at creation, and again only
        where MinibatchSize, MaxPrefetch or Threads grew. A no-op for other
        backends."""
        warm = getattr(getattr(self._network, "backend", None), "warm_up", None)
        if callable(warm) and self._warm:
            slots = self._native.slots_in_use(self.search_threads()) if self._native is not None else []
            warm(self.minibatch_size() + self.params.MaxPrefetch, slots)

    def _native_search_for(self, network):
        """The native search for `network`, or None for the Python one."""
        if self._implementation == "reference":
            return None
        from lc0_rocm.search import native
        reason = native.unavailable_reason(network)
        if reason is None:
            return native.NativeSearch(network)
        if self._implementation == "native":
            raise InvalidArgumentError(f"the native search cannot run here: {reason}")
        if hasattr(network, "forward_packed"):        # a real network: say why it is slower
            _notice_once(f"lc0-rocm: native search unavailable ({reason}); using the Python search")
        return None

    @property
    def implementation(self) -> str:
        """"native" or "reference": the search this engine runs."""
        return "native" if self._native is not None else "reference"

    def set_tablebase(self, tablebase) -> None:
        """Syzygy tablebases for probing inside the tree (lc0 does the same):
        a python-chess `chess.syzygy.Tablebase`, or None to stop probing."""
        self._tablebase = tablebase
        if self._native is not None:
            self._native.set_tablebase(tablebase)
        self.new_game()

    def new_game(self) -> None:
        """Forget the tree and the NN cache."""
        self._cache.clear()
        if getattr(self, "_native", None) is not None:
            self._native.new_game()
        self._tree = None
        self._tree_start = None
        self._tree_moves = []

    @property
    def network(self):
        return self._network

    def backend_attributes(self) -> BackendAttributes:
        """The network's backend's attributes (threads, batch sizes); an
        evaluator that is no backend runs in this process, as cpu does."""
        ask = getattr(getattr(self._network, "backend", None), "attributes", None)
        return ask() if callable(ask) else cpu.ATTRIBUTES

    def search_threads(self) -> int:
        """Threads, or with Threads 0 the backend's suggestion (one on cpu,
        two on one GPU, three to five for a small residual net there such
        as maia-1900 (by the host's cores), two per child under roundrobin
        and multiplexing, two under demux and on the random backend); at most
        MaxBatchesInFlight (0: the suggestion, at least 2). Each search
        thread holds a batch's visits in flight: beyond what the network can
        use at once, more threads only add collisions and smaller batches
        (lc0's search slows down with them), so they are not started.
        While the root has fewer than ParallelSearchMinimumVisits visits
        (native search) only the first of them gathers: a small tree grows
        as with Threads 1."""
        suggested = self.backend_attributes().suggested_num_search_threads
        cap = self.params.MaxBatchesInFlight or max(2, suggested)
        return min(self.params.Threads or suggested, cap)

    @staticmethod
    def _search_pipelined(search, report) -> None:
        """Two batches in flight: gather the next while the network computes
        the current one (how lc0's two search threads overlap). Any number
        of Threads >= 2 runs this one pipeline."""
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lc0-rocm-nn") as pool:
            inflight = None
            while True:
                batch = search.gather_batch()
                stop = search.stops_midway(batch)
                future = None
                if not stop:
                    search.add_prefetch(batch)
                    future = pool.submit(search.evaluate, batch)
                if inflight is not None:
                    done, done_future = inflight
                    stop = search.finish(done, done_future.result()) or stop
                    inflight = None
                if stop:
                    if future is not None:
                        future.result()          # let the network call end first
                    search.abandon(batch)
                    return
                inflight = (batch, future)
                report()

    def minibatch_size(self) -> int:
        """MinibatchSize, or with 0 default_minibatch of the backend."""
        return self.params.MinibatchSize or default_minibatch(self.backend_attributes())

    def wait_idle(self) -> None:
        """Wait for a stopped search's last network batch (the native search
        answers `stop` before it is back), so that the next search starts at
        once; a UCI engine counts this wait against the move's clock."""
        if self._native is not None:
            with self._lock:
                self._native.wait_idle()

    # ------------------------------------------------------------------
    def search(self, board: chess.Board, *, nodes: int | None = None,
               movetime: float | None = None, time_budget: float | None = None,
               searchmoves: list[chess.Move] | None = None, infinite: bool = False,
               stop: threading.Event | None = None,
               on_info: Callable[[SearchInfo], None] | None = None,
               depth: int | None = None, mate: int | None = None) -> SearchResult:
        """Search `board` (its move stack is the game history) until a limit
        is reached; with no limit at all, until `stop` is set.

        Limits: `nodes` (visits), `movetime` (seconds, as a float: 1.5 is
        1.5 s; the same as python-chess's `Limit(time=...)`), `time_budget`
        (seconds the time manager may spend), `depth` (average depth), `mate`
        (stop once a mate in that many moves is proven), `infinite` (only
        `stop`). `searchmoves` restricts the root moves; `on_info` gets a
        SearchInfo about twice a second, as UCI's `info` lines."""
        if not isinstance(board, chess.Board):
            raise TypeError("search() needs a chess.Board")
        for limit_name, value in (("nodes", nodes), ("depth", depth), ("mate", mate)):
            _check_type(limit_name, value, numbers.Integral, "an int")
        for limit_name, value in (("movetime", movetime), ("time_budget", time_budget)):
            _check_type(limit_name, value, numbers.Real, "a number of seconds")
        if stop is not None and not callable(getattr(stop, "is_set", None)):
            raise TypeError(f"stop must be a threading.Event, got {type(stop).__name__} {stop!r}")
        check_nodes(nodes)
        for limit_name, value in (("depth", depth), ("mate", mate)):
            if value is not None and abs(value) > MAX_INT32:
                raise InvalidArgumentError(f"{limit_name} must be within +-{MAX_INT32}, got {value}")
        longer = ("" if self.movetime_limit_s is None else
                  f"for a search longer than {self.movetime_limit_s:g} s set engine.movetime_limit_s = None, "
                  f"or use infinite=True with stop")
        for limit_name, value in (("movetime", movetime), ("time_budget", time_budget)):
            check_seconds(value, limit_name, self.movetime_limit_s, allow_zero=True, longer=longer)
        if getattr(self._network, "closed", False):
            raise ClosedError(f"{self._network!r} is closed; load the network again to search")
        check_position(board)
        legal = list(board.legal_moves)
        if isinstance(searchmoves, (str, chess.Move)):
            searchmoves = [searchmoves]
        if searchmoves:
            searchmoves = [_as_move(board, m) for m in searchmoves]
            bad = [m for m in searchmoves if m not in legal]
            if bad:
                raise InvalidArgumentError(f"searchmoves not legal here: {' '.join(m.uci() for m in bad)}")
        if not legal:
            return self._empty_result(board)
        for limit_name, value in (("depth", depth), ("mate", mate)):
            if value is not None and value < 1:
                raise InvalidArgumentError(f"{limit_name} must be >= 1, got {value}")
        if (nodes is None and movetime is None and time_budget is None and depth is None
                and mate is None and not infinite and stop is None):
            raise InvalidArgumentError("search() needs a limit: nodes, movetime, time_budget, depth, mate, "
                             "infinite or stop")

        infinite = infinite or mate is not None or (
            nodes is None and movetime is None and time_budget is None and depth is None)
        with self._lock:
            self.warm_up()        # nothing unless MinibatchSize or MaxPrefetch grew
        if self._native is not None:
            with self._lock:
                return self._search_native(board, nodes=nodes, movetime=movetime,
                                           time_budget=time_budget, searchmoves=searchmoves,
                                           infinite=infinite, stop=stop, on_info=on_info,
                                           depth=depth, mate=mate)
        with self._lock:
            from lc0_rocm.search.positions import PositionWalker
            tree = self._tree_for(board)
            walker = PositionWalker(board)
            # lc0: go mate (and no limit at all) is infinite: no smart pruning
            limits = Limits(nodes=nodes, movetime=movetime, time_budget=time_budget,
                            infinite=infinite, stop=stop, searchmoves=searchmoves, depth=depth,
                            mate=mate)
            search = Search(tree, walker, self._evaluator, self._cache, self.params, limits,
                            self.minibatch_size(), tablebase=self._tablebase)
            state = {"next_info": time.monotonic() + INFO_INTERVAL_S}

            rescale = (search.rescale_ratio, search.rescale_diff, search.contempt_mode)
            multipv = self.params.MultiPV

            def report():
                if on_info is not None and time.monotonic() >= state["next_info"]:
                    for line in self._lines(_snapshot_of(search, multipv), rescale, search.root_black):
                        on_info(line)
                    state["next_info"] = time.monotonic() + INFO_INTERVAL_S

            if self.search_threads() >= 2:
                self._search_pipelined(search, report)
            else:
                while not search.run_iteration():
                    report()
            result = self.result_of(_snapshot_of(search, multipv), rescale, search.root_black, board,
                                  searchmoves)
            if on_info is not None:
                for line in result.lines:
                    on_info(line)
            return result

    # ------------------------------------------------------------------
    def _tree_for(self, board: chess.Board) -> Tree:
        """The previous tree re-rooted at `board` when the game continued
        from the last searched position, else a new tree (lc0's
        ResetToPosition)."""
        start = board.root().fen()
        moves = list(board.move_stack)
        tree = self._tree
        new_root = -1
        if (tree is not None and start == self._tree_start
                and moves[:len(self._tree_moves)] == self._tree_moves):
            new_root = 0
            for move in moves[len(self._tree_moves):]:
                new_root = _child_by_move(tree, new_root, move)
                if new_root < 0:
                    break
        if new_root < 0:
            tree = Tree()
        elif new_root != 0:
            tree = tree.subtree(new_root)
        if tree.terminal[0]:
            tree.make_not_terminal(0)
        self._tree = tree
        self._tree_start = start
        self._tree_moves = moves
        return tree

    def move_temperature(self, board) -> float:
        """The temperature a move is picked with at `board`'s ply (lc0's
        Temperature, TempDecayMoves, TempCutoffMove, ...): 0 picks the best.
        Reads only `board.ply()`."""
        return _temperature_for(self.params, board)

    def _temperature(self, board: chess.Board) -> float:
        return self.move_temperature(board)

    def _empty_result(self, board: chess.Board) -> SearchResult:
        outcome = board.outcome(claim_draw=False)
        if outcome is not None and outcome.winner is not None:
            wdl = (0.0, 0.0, 1.0)    # the side to move is mated
        else:
            wdl = (0.0, 1.0, 0.0)
        q = wdl[0] - wdl[2]
        return SearchResult(None, None, [], wdl, q, 0, 0, 0.0, 0, 0, None, [], {})

    def _search_native(self, board: chess.Board, *, nodes, movetime, time_budget, searchmoves,
                       infinite, stop, on_info, depth, mate) -> SearchResult:
        native = self._native
        native.set_params(self.params, self.minibatch_size(), self.search_threads())
        multipv = self.params.MultiPV
        root_black = board.turn == chess.BLACK

        def report():
            if on_info is not None:
                snap = native.snapshot(multipv)
                for line in self._lines(snap, native.rescale, root_black):
                    on_info(line)

        native.run(board, self.params, nodes=nodes, movetime=movetime, time_budget=time_budget,
                   infinite=infinite, depth=depth, mate=mate, searchmoves=searchmoves, stop=stop,
                   report=report if on_info is not None else None, interval_s=INFO_INTERVAL_S)
        snap = native.snapshot(multipv)
        result = self.result_of(snap, native.rescale, root_black, board, searchmoves)
        if on_info is not None:
            for line in result.lines:
                on_info(line)
        return result

    def _lines(self, snap: Snapshot, rescale: tuple, root_black: bool) -> list[SearchInfo]:
        """lc0's info lines (one per MultiPV line) from a search's state."""
        playouts = snap.total_playouts
        nps = 0
        if snap.nps_elapsed_ms > 0:
            nps = int(playouts * 1000 / snap.nps_elapsed_ms)
        depth = snap.cum_depth // playouts if playouts else 0
        has_mlh = self._has_moves_left()
        lines = []
        for k, j in enumerate(snap.best, start=1):
            e = snap.edges[j]
            q, shown, cp, mate = self.line_score(snap, e, rescale, root_black)
            moves_left = None
            if has_mlh:
                m = e.m if e.visits > 0 else 1.0 + snap.root_m
                moves_left = int((1.0 + m) / 2.0)
            lines.append(SearchInfo(
                depth=depth, seldepth=snap.max_depth, time_ms=int(snap.elapsed_ms),
                nodes=e.visits if self.params.PerPvCounters else snap.total_nodes,
                nps=nps, multipv=k, move=e.move,
                pv=snap.pv_of(j), q=q, wdl=wdl_probabilities(shown[0], shown[1]),
                moves_left=moves_left, tbhits=snap.tb_hits, score_cp=cp, mate=mate,
                wdl_permille=wdl_permille(shown[0], shown[1])))
        return lines

    def line_score(self, snap: Snapshot, e: RootEdge, rescale: tuple,
                   root_black: bool) -> tuple[float, tuple[float, float, float], int | None, int | None]:
        """A root edge's score as its info line gives it: (q, the (wl, d, mu)
        shown, score cp, mate), one of the last two None. An unvisited edge
        takes the root's value. `e` may be the core's lc0core_root_edge as
        well (the same fields)."""
        rescale_ratio, rescale_diff, contempt_mode = rescale
        draw_score = snap.draw_score
        visited = e.visits > 0
        wl = e.wl if visited else -snap.root_wl
        d = e.d if visited else snap.root_d
        q = (e.wl + draw_score * e.d) if visited else -(snap.root_wl - draw_score * snap.root_d)
        # lc0 reports W, D, L (and WDL_mu's mu) after its WDLRescale:
        # contempt as the analysing side sees it, and lossy fast math.
        shown = (wl, d, 0.0)
        if self.params.ScoreType == "WDL_mu" or (
                rescale_diff != 0.0 and contempt_mode != contempt.NONE):
            sign = 1.0 if (contempt_mode == contempt.BLACK) == root_black else -1.0
            diff = (0.0 if contempt_mode == contempt.NONE
                    else rescale_diff * self.params.WDLEvalObjectivity)
            shown = contempt.wdl_rescale(wl, d, rescale_ratio, diff, sign, True,
                                         self.params.WDLMaxS)
        if visited and e.terminal and wl != 0.0:
            return q, shown, None, mate_score(wl, e.m, e.terminal == TABLEBASE)
        return q, shown, score_cp(shown[0], shown[1], q, self.params.ScoreType, True, rescaled=shown), None

    def best_value(self, snap: Snapshot, e: RootEdge | None) -> tuple[float, float, float | None]:
        """(wl, d, moves left) of the result: the best edge's, or the root's
        when it has none or the edge is unvisited (moves left None without
        the net's moves-left head)."""
        has_mlh = self._has_moves_left()
        if e is not None and e.visits > 0:
            return e.wl, e.d, (e.m + 1 if has_mlh else None)
        return -snap.root_wl, snap.root_d, (snap.root_m if has_mlh else None)

    def _has_moves_left(self) -> bool:
        return bool(getattr(self._evaluator, "has_moves_left", False))

    def result_of(self, snap: Snapshot, rescale: tuple, root_black: bool, board: chess.Board,
                  searchmoves) -> SearchResult:
        """The SearchResult of a finished search's snapshot (also for searches
        run outside this engine with its settings, as analysis runs them)."""
        lines = self._lines(snap, rescale, root_black)
        best = snap.best[:1]
        temperature = self._temperature(board)
        if best and temperature > 0:
            best = [_root_edge_with_temperature(self.params, snap, temperature, searchmoves)]
        has_mlh = self._has_moves_left()
        best_move = ponder = None
        pv: list[chess.Move] = []
        if best:
            j = best[0]
            best_move = snap.edges[j].move
            pv = snap.pv_of(j)
            if len(pv) > 1:
                ponder = pv[1]
        stats = {}
        for e in snap.edges:
            if e.visits:
                wdl = ((1 + e.wl - e.d) / 2, e.d, (1 - e.wl - e.d) / 2)
                stats[e.move] = MoveStats(e.visits, e.wl, e.prior, wdl, e.m if has_mlh else None,
                                          e.in_flight)
            else:
                stats[e.move] = MoveStats(0, math.nan, e.prior, (math.nan,) * 3, None, 0)
        wl, d, moves_left = self.best_value(snap, snap.edges[best[0]] if best else None)
        wdl = ((1 + wl - d) / 2, d, (1 - wl - d) / 2)
        first = lines[0] if lines else None
        return SearchResult(
            best_move=best_move, ponder_move=ponder, pv=pv, wdl=wdl, q=wl,
            nodes=snap.total_nodes, nps=first.nps if first else 0,
            time=snap.elapsed_ms / 1000.0, depth=first.depth if first else 0,
            seldepth=snap.max_depth, moves_left=moves_left, lines=lines, stats=stats,
            nn_evals=snap.nn_evals)


def _notice_once(message: str, _seen: set = set()) -> None:
    if message not in _seen:
        _seen.add(message)
        print(message, file=sys.stderr, flush=True)


def _root_edge_with_temperature(params, snap: Snapshot, temperature: float, searchmoves,
                                rng=None) -> int:
    """lc0's GetBestRootChildWithTemperature: sample a root edge with
    weight ((N + offset) / max N)^(1/T) among edges whose Q is within
    TempValueCutoff (in win %) of the most visited one."""
    import random
    rng = rng or random
    draw_score = snap.draw_score
    allowed = set(searchmoves or ())
    edges = [k for k, e in enumerate(snap.edges) if not allowed or e.move in allowed]
    visited_pol = sum(e.prior for e in snap.edges if e.visits > 0)
    absolute, value = params.fpu(True)
    fpu = value if absolute else (
        -(snap.root_wl - draw_score * snap.root_d) - value * math.sqrt(visited_pol))
    offset = params.TempVisitOffset

    def q_of(k):
        e = snap.edges[k]
        return e.wl + draw_score * e.d if e.visits > 0 else fpu

    max_n, max_eval = 0.0, -1.0
    for k in edges:
        if snap.edges[k].visits + offset > max_n:
            max_n, max_eval = snap.edges[k].visits + offset, q_of(k)
    min_eval = max_eval - params.TempValueCutoff / 50.0
    candidates, weights = [], []
    for k in edges:
        if q_of(k) < min_eval:
            continue
        base = snap.edges[k].prior if max_n <= 0 else (snap.edges[k].visits + offset) / max_n
        candidates.append(k)
        weights.append(max(0.0, base) ** (1 / temperature))
    if not candidates or sum(weights) <= 0:
        return snap.best[0]
    return rng.choices(candidates, weights)[0]


def _snapshot_of(search: Search, count: int) -> Snapshot:
    """The Python search's state in the native search's Snapshot form."""
    tree = search.tree
    first = tree.first_edge[0]
    edges = []
    for j in tree.edges(0):
        c = tree.e_child[j]
        if c >= 0:
            edges.append(RootEdge(tree.e_move[j], tree.n[c], tree.n_in_flight[c], tree.wl[c],
                                  tree.d[c], tree.m[c], tree.e_p[j], tree.terminal[c]))
        else:
            edges.append(RootEdge(tree.e_move[j], 0, 0, 0.0, 1.0, 0.0, tree.e_p[j], 0))
    nps_elapsed = -1.0
    if search.nps_start_time is not None:
        nps_elapsed = (time.monotonic() - search.nps_start_time) * 1000.0
    snap = Snapshot(search.total_nodes, search.total_playouts, search.cum_depth, search.max_depth,
                    search.tb_hits, search.nn_evals, search.elapsed_ms(), nps_elapsed, tree.n[0],
                    tree.wl[0], tree.d[0], tree.m[0], search.draw_score_even, len(tree),
                    0, edges, [j - first for j in search.best_edges(0, count, 0)],
                    lambda k: search.principal_variation(first + k))
    return snap


def check_position(board: chess.Board) -> None:
    """ValueError for a position no search can start from. Positions lc0
    plays from are fine even when python-chess frowns (odd checkers, an
    e.p. square or castling right taken as written); no king, too many
    kings, pawns on the back rank or the side not to move in check are
    not."""
    tolerated = (chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK
                 | chess.STATUS_INVALID_EP_SQUARE | chess.STATUS_BAD_CASTLING_RIGHTS)
    if board.status() & ~tolerated:
        raise InvalidArgumentError(f"invalid position: {board.fen()}")


def _check_type(name: str, value, types, what: str) -> None:
    """TypeError for a limit of the wrong type (bool is no number here)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")


def _as_move(board: chess.Board, move) -> chess.Move:
    """A searchmoves entry: a chess.Move, or a move in UCI notation ("e2e4")."""
    if isinstance(move, chess.Move):
        return move
    if isinstance(move, str):
        try:
            return board.parse_uci(move)
        except ValueError:
            raise InvalidArgumentError(f"searchmoves: {move!r} is not a legal move here") from None
    raise TypeError(f"searchmoves must hold chess.Move or UCI strings, got {type(move).__name__} {move!r}")


def _temperature_for(params, board: chess.Board) -> float:
    """lc0's move temperature: Temperature, decayed over TempDecayMoves after
    TempDecayDelayMoves, TempEndgame from TempCutoffMove on."""
    temperature = params.Temperature
    moves = board.ply() // 2
    cutoff = params.TempCutoffMove
    decay, delay = params.TempDecayMoves, params.TempDecayDelayMoves
    if cutoff and moves + 1 >= cutoff:
        return params.TempEndgame
    if temperature and decay:
        if moves >= delay + decay:
            temperature = 0.0
        elif moves >= delay:
            temperature *= (delay + decay - moves) / decay
        temperature = max(temperature, params.TempEndgame)
    return temperature


def _child_by_move(tree: Tree, node: int, move: chess.Move) -> int:
    for j in tree.edges(node):
        if tree.e_move[j] == move:
            return tree.e_child[j]
    return -1
