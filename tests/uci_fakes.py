"""Fast stand-ins for the network and the search engine, with the Engine
contract's shape, so the UCI loop can be tested in-process (and fuzzed)
without the cost of a real net. They record what the UCI layer asked of them."""
from __future__ import annotations

import dataclasses
import queue
import threading
import time

import chess

from lc0_rocm.uci_options import OptionSpec


@dataclasses.dataclass
class SearchInfo:
    depth: int = 1
    seldepth: int = 1
    time_ms: int = 0
    nodes: int = 0
    nps: int | None = None
    multipv: int = 1
    move: chess.Move | None = None
    pv: list = dataclasses.field(default_factory=list)
    q: float = 0.0
    wdl: tuple = (0.3, 0.4, 0.3)
    moves_left: float | None = None
    tbhits: int = 0
    score_cp: int | None = 0
    mate: int | None = None


@dataclasses.dataclass
class MoveStats:
    visits: int
    q: float
    p: float
    wdl: tuple
    moves_left: float | None = None


@dataclasses.dataclass
class SearchResult:
    best_move: chess.Move
    ponder_move: chess.Move | None
    pv: list
    wdl: tuple
    q: float
    nodes: int
    nps: float
    time: float
    depth: int
    seldepth: int
    moves_left: float | None
    lines: list
    stats: dict


class FakeNetwork:
    def __init__(self, path, backend="auto", **options):
        self.path, self.backend_name, self.options = path, backend, options
        self.backend = backend


class FakeLoader:
    """network_loader: records calls; fails for backends in `broken`."""

    def __init__(self, broken=("rocm", "rocm-fp16", "rocm-auto", "cuda", "cuda-fp16", "cuda-auto")):
        self.calls = []
        self.broken = set(broken)

    def __call__(self, path, backend="auto", **options):
        self.calls.append((path, backend, options))
        if backend in self.broken:
            raise RuntimeError(f"backend {backend} is not available here")
        return FakeNetwork(path, backend, **options)


class FakeEngine:
    """The Engine contract, searching by picking legal moves in order.

    Each "node" costs `node_seconds`; a search ends at `nodes`, at
    `movetime`, when `stop` is set, or (not infinite, no limits) after
    `default_nodes`. Every search's arguments are put on `searches`."""

    OPTIONS = {
        "Threads": OptionSpec("spin", 0, 0, 128),
        "MinibatchSize": OptionSpec("spin", 0, 0, 1024),
        "NNCacheSize": OptionSpec("spin", 2000000, 0, 999999999),
        "CPuct": OptionSpec("float", 1.745, 0.0, 100.0),
        "FpuValue": OptionSpec("float", 0.33, -100.0, 100.0),
        "MultiPV": OptionSpec("spin", 1, 1, 500),
        "VerboseMoveStats": OptionSpec("check", False),
        "ScoreType": OptionSpec("combo", "WDL_mu", choices=("centipawn", "WDL_mu")),
    }
    node_seconds = 0.0
    default_nodes = 3
    instances: list = []

    def __init__(self, network, **options):
        self.network = network
        self.options = {k: s.default for k, s in self.OPTIONS.items()}
        for k, v in options.items():
            self.set_option(k, v)
        self.searches = queue.Queue()
        self.new_games = 0
        FakeEngine.instances.append(self)

    def set_option(self, name, value):
        if name not in self.OPTIONS:
            raise ValueError(f"unknown option {name!r}")
        self.options[name] = value

    def set_network(self, network):
        self.network = network

    def new_game(self):
        self.new_games += 1

    def search(self, board, *, nodes=None, movetime=None, time_budget=None, searchmoves=None,
               infinite=False, stop=None, on_info=None):
        start = time.monotonic()
        self.searches.put(dict(fen=board.fen(), nodes=nodes, movetime=movetime,
                               time_budget=time_budget, searchmoves=searchmoves,
                               infinite=infinite, thread=threading.current_thread().name))
        moves = list(searchmoves) if searchmoves else list(board.legal_moves)
        done = 0
        while True:
            done += 1
            if nodes is not None and done >= nodes:
                break
            if stop is not None and stop.is_set():
                break
            if movetime is not None and time.monotonic() - start >= movetime:
                break
            if not infinite and nodes is None and movetime is None and done >= self.default_nodes:
                break
            if self.node_seconds:
                time.sleep(self.node_seconds)
            elif infinite and (stop is None or stop.wait(0.001)):
                break
        elapsed = time.monotonic() - start
        lines = []
        for k, move in enumerate(moves[: self.options["MultiPV"]]):
            after = board.copy(stack=False)
            after.push(move)
            reply = next(iter(after.legal_moves), None)
            pv = [move] + ([reply] if reply else [])
            lines.append(SearchInfo(depth=2, seldepth=3, time_ms=int(elapsed * 1000), nodes=done,
                                    nps=int(done / max(elapsed, 1e-3)), multipv=k + 1, move=move,
                                    pv=pv, q=0.1 - 0.01 * k, wdl=(0.4, 0.3, 0.3),
                                    moves_left=40.0, score_cp=10 - k))
        if on_info:
            for line in lines:
                on_info(line)
        best = lines[0]
        stats = {m: MoveStats(visits=done if m == best.move else 0, q=0.1, p=1.0 / len(moves),
                              wdl=(0.4, 0.3, 0.3), moves_left=40.0) for m in moves}
        return SearchResult(best_move=best.move, ponder_move=best.pv[1] if len(best.pv) > 1 else None,
                            pv=best.pv, wdl=(0.4, 0.3, 0.3), q=0.1, nodes=done,
                            nps=done / max(elapsed, 1e-3), time=elapsed, depth=2, seldepth=3,
                            moves_left=40.0, lines=lines, stats=stats)


class Collector:
    """Output sink for UciEngine that lets a test wait for a line."""

    def __init__(self):
        self.lines = []
        self._cond = threading.Condition()

    def __call__(self, line):
        with self._cond:
            self.lines.append(line)
            self._cond.notify_all()

    def wait_for(self, prefix, timeout=10.0, start=0):
        """The first line from index `start` on that starts with `prefix`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.lines[start:]:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line starting with {prefix!r}; got {self.lines[start:]}")
                self._cond.wait(left)

    def take(self):
        with self._cond:
            lines, self.lines = self.lines, []
            return lines
