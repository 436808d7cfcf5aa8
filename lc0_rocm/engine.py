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

import dataclasses
import math
import numbers
import threading
import time
from typing import TYPE_CHECKING, Callable

import chess

if TYPE_CHECKING:
    from lc0_rocm.network import Network
from lc0_rocm.search.core import Limits, Search
from lc0_rocm.search.evaluator import NetworkEvaluator, NNCache
from lc0_rocm.search.params import (CPU_SUGGESTED_MINIBATCH, GPU_SUGGESTED_MINIBATCH, OPTIONS,
                                    OptionSpec, SearchParams, option_name)
from lc0_rocm.search import contempt
from lc0_rocm.search.score import mate_score, score_cp, wdl_permille
from lc0_rocm.search.tree import TABLEBASE, Tree

__all__ = ["Engine", "SearchInfo", "SearchResult", "MoveStats", "OptionSpec"]

INFO_INTERVAL_S = 0.5


@dataclasses.dataclass
class SearchInfo:
    """One `info` line (one per MultiPV line), lc0's fields."""
    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int
    multipv: int                 # 1-based
    move: chess.Move | None
    pv: list[chess.Move]
    q: float                     # side to move at the root
    wdl: tuple[int, int, int]    # permille, side to move
    moves_left: int | None
    tbhits: int
    score_cp: int | None         # None when `mate` is set
    mate: int | None


@dataclasses.dataclass
class MoveStats:
    visits: int
    q: float                     # root side to move's view
    p: float                     # prior (after policy temperature)
    wdl: tuple[float, float, float]
    moves_left: float | None
    n_in_flight: int = 0


@dataclasses.dataclass
class SearchResult:
    """What Engine.search found, from the side to move at the root.

    best_move / ponder_move: the move to play and the expected reply (None
    when there is no legal move); pv: the principal variation; wdl: (win,
    draw, loss) probabilities and q = win - loss of the best move; nodes:
    visits searched; nps: nodes per second; time: seconds the search took;
    depth / seldepth: lc0's average and maximum depth; moves_left: expected
    remaining plies (None without that head); lines: one SearchInfo per
    MultiPV line, best first; stats: per root move visit counts, priors and
    values (MoveStats); nn_evals: network evaluations this search made."""

    best_move: chess.Move | None
    ponder_move: chess.Move | None
    pv: list[chess.Move]
    wdl: tuple[float, float, float]
    q: float
    nodes: int
    nps: int
    time: float                  # seconds
    depth: int
    seldepth: int
    moves_left: float | None
    lines: list[SearchInfo]
    stats: dict[chess.Move, MoveStats]
    nn_evals: int = 0


class Engine:
    """lc0-style MCTS over one network. Not thread-safe: one search at a
    time; another thread may only set the `stop` event."""

    OPTIONS: dict[str, OptionSpec] = OPTIONS

    def __init__(self, network: Network, **options: object) -> None:
        """`network`: a loaded Network (lc0_rocm.load_network). `options`:
        search knobs by lc0's UCI names (Threads, MinibatchSize, CPuct,
        MultiPV, NNCacheSize, ...); ValueError for unknown names or values."""
        self.params = SearchParams()
        for name, value in options.items():
            self.set_option(name, value)
        self._network = None
        self._evaluator = None
        self._cache = NNCache(self.params.NNCacheSize)
        self._tree: Tree | None = None
        self._tree_start: str | None = None
        self._tree_moves: list[chess.Move] = []
        self._lock = threading.Lock()
        self._tablebase = None
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
        if not (hasattr(network, "forward") or (hasattr(network, "prepare") and hasattr(network, "run"))):
            raise TypeError(f"Engine needs a network from lc0_rocm.load_network(...), got {network!r}")
        self._network = network
        self._evaluator = (network if hasattr(network, "prepare") and hasattr(network, "run")
                           else NetworkEvaluator(network))
        self.new_game()

    def set_tablebase(self, tablebase) -> None:
        """Syzygy tablebases for probing inside the tree (lc0 does the same):
        a python-chess `chess.syzygy.Tablebase`, or None to stop probing."""
        self._tablebase = tablebase
        self.new_game()

    def new_game(self) -> None:
        """Forget the tree and the NN cache."""
        self._cache.clear()
        self._tree = None
        self._tree_start = None
        self._tree_moves = []

    @property
    def network(self):
        return self._network

    def search_threads(self) -> int:
        """lc0's Threads 0: one search thread on the cpu backend, two on a
        GPU (one gathers while the other's batch is at the network)."""
        if self.params.Threads:
            return self.params.Threads
        backend = getattr(self._network, "backend", None)
        name = backend if isinstance(backend, str) else getattr(backend, "name", "cpu")
        return 1 if str(name).startswith("cpu") else 2

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
        if self.params.MinibatchSize:
            return self.params.MinibatchSize
        suggested = getattr(self._network, "recommended_batch_size", None)
        if suggested:
            return int(suggested)
        backend = getattr(self._network, "backend", None)
        name = backend if isinstance(backend, str) else getattr(backend, "name", "cpu")
        if str(name).startswith("cpu"):
            return CPU_SUGGESTED_MINIBATCH
        # lc0's cuda backend suggests 2 x the GPU's multiprocessor count.
        info = getattr(backend, "device_info", None) or {}
        if info.get("multiprocessors"):
            return 2 * int(info["multiprocessors"])
        return GPU_SUGGESTED_MINIBATCH

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
        if nodes is not None and nodes < 1:
            raise ValueError(f"nodes must be >= 1, got {nodes}")
        for limit_name, value in (("movetime", movetime), ("time_budget", time_budget)):
            if value is not None and not value >= 0:
                raise ValueError(f"{limit_name} must be >= 0 seconds, got {value}")
        # Positions lc0 plays from are fine even when python-chess frowns
        # (odd checkers, an e.p. square or castling right taken as written);
        # no king, too many kings, pawns on the back rank or the side not to
        # move in check are not.
        status = board.status()
        tolerated = (chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK
                     | chess.STATUS_INVALID_EP_SQUARE | chess.STATUS_BAD_CASTLING_RIGHTS)
        if status & ~tolerated:
            raise ValueError(f"invalid position: {board.fen()}")
        legal = list(board.legal_moves)
        if isinstance(searchmoves, (str, chess.Move)):
            searchmoves = [searchmoves]
        if searchmoves:
            searchmoves = [_as_move(board, m) for m in searchmoves]
            bad = [m for m in searchmoves if m not in legal]
            if bad:
                raise ValueError(f"searchmoves not legal here: {' '.join(m.uci() for m in bad)}")
        if not legal:
            return self._empty_result(board)
        for limit_name, value in (("depth", depth), ("mate", mate)):
            if value is not None and value < 1:
                raise ValueError(f"{limit_name} must be >= 1, got {value}")
        if (nodes is None and movetime is None and time_budget is None and depth is None
                and mate is None and not infinite and stop is None):
            raise ValueError("search() needs a limit: nodes, movetime, time_budget, depth, mate, "
                             "infinite or stop")

        with self._lock:
            from lc0_rocm.search.positions import PositionWalker
            tree = self._tree_for(board)
            walker = PositionWalker(board)
            limits = Limits(nodes=nodes, movetime=movetime, time_budget=time_budget,
                            # lc0: go mate (and no limit at all) is infinite: no smart pruning
                            infinite=infinite or mate is not None or (
                                nodes is None and movetime is None and time_budget is None
                                and depth is None),
                            stop=stop, searchmoves=searchmoves, depth=depth, mate=mate)
            search = Search(tree, walker, self._evaluator, self._cache, self.params, limits,
                            self.minibatch_size(), tablebase=self._tablebase)
            state = {"next_info": time.monotonic() + INFO_INTERVAL_S}

            def report():
                if on_info is not None and time.monotonic() >= state["next_info"]:
                    for line in self._lines(search, board):
                        on_info(line)
                    state["next_info"] = time.monotonic() + INFO_INTERVAL_S

            if self.search_threads() >= 2:
                self._search_pipelined(search, report)
            else:
                while not search.run_iteration():
                    report()
            result = self._result(search, board)
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

    def _temperature(self, board: chess.Board) -> float:
        return _temperature_for(self.params, board)

    def _empty_result(self, board: chess.Board) -> SearchResult:
        outcome = board.outcome(claim_draw=False)
        if outcome is not None and outcome.winner is not None:
            wdl = (0.0, 0.0, 1.0)    # the side to move is mated
        else:
            wdl = (0.0, 1.0, 0.0)
        q = wdl[0] - wdl[2]
        return SearchResult(None, None, [], wdl, q, 0, 0, 0.0, 0, 0, None, [], {})

    def _lines(self, search: Search, board: chess.Board) -> list[SearchInfo]:
        tree = search.tree
        multipv = self.params.MultiPV
        edges = search.best_edges(0, multipv, 0)
        elapsed_ms = int(search.elapsed_ms())
        playouts = search.total_playouts
        nps = 0
        if search.nps_start_time is not None:
            since = (time.monotonic() - search.nps_start_time) * 1000.0
            if since > 0:
                nps = int(playouts * 1000 / since)
        depth = search.cum_depth // playouts if playouts else 0
        has_mlh = search.has_mlh
        draw_score = search.draw_score_even
        default_wl = -tree.wl[0]
        default_d = tree.d[0]
        lines = []
        for k, j in enumerate(edges, start=1):
            c = tree.e_child[j]
            visited = c >= 0 and tree.n[c] > 0
            wl = tree.wl[c] if visited else default_wl
            d = tree.d[c] if visited else default_d
            q = (tree.wl[c] + draw_score * tree.d[c]) if visited else -(tree.wl[0] - draw_score * tree.d[0])
            mate = None
            cp = None
            # lc0 reports W, D, L (and WDL_mu's mu) after its WDLRescale:
            # contempt as the analysing side sees it, and lossy fast math.
            shown = (wl, d, 0.0)
            if self.params.ScoreType == "WDL_mu" or (
                    search.rescale_diff != 0.0 and search.contempt_mode != contempt.NONE):
                sign = 1.0 if (search.contempt_mode == contempt.BLACK) == search.root_black else -1.0
                diff = (0.0 if search.contempt_mode == contempt.NONE
                        else search.rescale_diff * self.params.WDLEvalObjectivity)
                shown = contempt.wdl_rescale(wl, d, search.rescale_ratio, diff, sign, True,
                                             self.params.WDLMaxS)
            if visited and tree.terminal[c] and wl != 0.0:
                mate = mate_score(wl, tree.m[c], tree.terminal[c] == TABLEBASE)
            else:
                cp = score_cp(shown[0], shown[1], q, self.params.ScoreType, True, rescaled=shown)
            moves_left = None
            if has_mlh:
                m = tree.m[c] if visited else 1.0 + tree.m[0]
                moves_left = int((1.0 + m) / 2.0)
            lines.append(SearchInfo(
                depth=depth, seldepth=search.max_depth, time_ms=elapsed_ms,
                nodes=(tree.n[c] if c >= 0 else 0) if self.params.PerPvCounters else search.total_nodes,
                nps=nps, multipv=k, move=tree.e_move[j],
                pv=search.principal_variation(j), q=q, wdl=wdl_permille(shown[0], shown[1]),
                moves_left=moves_left, tbhits=search.tb_hits, score_cp=cp, mate=mate))
        return lines

    def _result(self, search: Search, board: chess.Board) -> SearchResult:
        tree = search.tree
        lines = self._lines(search, board)
        best = search.best_edges(0, 1, 0)
        temperature = self._temperature(board)
        if best and temperature > 0:
            best = [search.best_root_edge_with_temperature(temperature)]
        best_move = ponder = None
        pv: list[chess.Move] = []
        if best:
            j = best[0]
            best_move = tree.e_move[j]
            pv = search.principal_variation(j)
            c = tree.e_child[j]
            if c >= 0 and tree.n[c] > 0 and tree.is_expanded(c):
                reply = search.best_edges(c, 1, 1)
                if reply:
                    ponder = tree.e_move[reply[0]]
        stats = {}
        for j in tree.edges(0):
            c = tree.e_child[j]
            n = tree.n[c] if c >= 0 else 0
            if n:
                wl, d, m = tree.wl[c], tree.d[c], tree.m[c]
                wdl = ((1 + wl - d) / 2, d, (1 - wl - d) / 2)
                stats[tree.e_move[j]] = MoveStats(n, wl, tree.e_p[j], wdl,
                                                  m if search.has_mlh else None,
                                                  tree.n_in_flight[c])
            else:
                stats[tree.e_move[j]] = MoveStats(0, math.nan, tree.e_p[j], (math.nan,) * 3, None, 0)
        if best and tree.e_child[best[0]] >= 0 and tree.n[tree.e_child[best[0]]] > 0:
            c = tree.e_child[best[0]]
            wl, d = tree.wl[c], tree.d[c]
            moves_left = tree.m[c] + 1 if search.has_mlh else None
        else:
            wl, d = -tree.wl[0], tree.d[0]
            moves_left = tree.m[0] if search.has_mlh else None
        wdl = ((1 + wl - d) / 2, d, (1 - wl - d) / 2)
        first = lines[0] if lines else None
        return SearchResult(
            best_move=best_move, ponder_move=ponder, pv=pv, wdl=wdl, q=wl,
            nodes=search.total_nodes, nps=first.nps if first else 0,
            time=search.elapsed_ms() / 1000.0, depth=first.depth if first else 0,
            seldepth=search.max_depth, moves_left=moves_left, lines=lines, stats=stats,
            nn_evals=search.nn_evals)


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
            raise ValueError(f"searchmoves: {move!r} is not a legal move here") from None
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
