"""The native search (native/core/src/search) driven from Python.

`NativeSearch(network)` holds one game's tree and the NN cache in the native
core and runs lc0's classic search there: no Python per batch on GPU
backends (the core calls the GPU library's forward directly, one stream per
search), the numpy `cpu` backend through a cffi callback, the `random`
backend natively. `lc0_rocm.engine.Engine` uses it; the Python search
(`lc0_rocm.search.core`) stays as the reference it is tested against.
"""
from __future__ import annotations

import atexit
import dataclasses
import threading
import weakref
from typing import Callable

import chess

from lc0_rocm.backends.base import c_slot, python_forward
from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.search import contempt
from lc0_rocm.search.params import SearchParams

STOP_POLL_S = 0.002


_LIVE: "weakref.WeakSet[NativeSearch]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """A run's thread may still be finishing a batch (maybe inside a Python
    callback): end them before the interpreter goes."""
    for search in list(_LIVE):
        search.close()


class NativeSearchError(Lc0RocmError, RuntimeError):
    """The native search failed (the message says why)."""


def unavailable_reason(network) -> str | None:
    """Why `network` cannot be searched natively here, or None when it can."""
    if not (hasattr(network, "forward_packed") and hasattr(network, "input_format")):
        return "the network is not a lc0_rocm Network"
    from lc0_rocm import native_core
    ok, reason = native_core.available()
    return None if ok else reason


@dataclasses.dataclass
class RootEdge:
    move: chess.Move
    visits: int
    in_flight: int
    wl: float
    d: float
    m: float
    prior: float
    terminal: int


@dataclasses.dataclass
class Snapshot:
    """The search's state for info lines and the result."""
    total_nodes: int
    total_playouts: int
    cum_depth: int
    max_depth: int
    tb_hits: int
    nn_evals: int
    elapsed_ms: float
    nps_elapsed_ms: float
    root_n: int
    root_wl: float
    root_d: float
    root_m: float
    draw_score: float
    tree_nodes: int
    tree_bytes: int
    edges: list[RootEdge]
    best: list[int]                  # root edge indices, best first
    pv_of: Callable[[int], list[chess.Move]] = None   # root edge index -> its PV


class NativeSearch:
    """One network, one game tree and NN cache in the native core."""

    def __init__(self, network):
        from lc0_rocm import native_core
        self.ffi, self.lib = native_core.load()
        ffi, lib = self.ffi, self.lib
        out = ffi.new("lc0core_search**")
        self._check(lib.lc0core_search_create(out), "create")
        self._handle = ffi.gc(out[0], lib.lc0core_search_destroy)
        # What close() needs, resolved now: close() also runs from __del__,
        # which the garbage collector may call inside a cffi call that holds
        # the ffi's lock (a first attribute lookup or ffi.new would then wait
        # for it forever).
        self._stop_fn, self._wait_fn = lib.lc0core_search_stop, lib.lc0core_search_wait
        self._finished = ffi.new("int*")
        self.network = network
        self._error: BaseException | None = None
        self._keep: list = []
        self._tablebase = None
        self._running = None
        self._evaluator = ffi.new("lc0core_evaluator*")
        self._slots: list[tuple] = []
        self._native_slots: list = []          # the backend's NativeSlots behind _slots
        self._slots_used = 1
        self._set_forward(network)
        self._install_evaluator()
        _LIVE.add(self)

    # ------------------------------------------------------------ setup
    def _check(self, status: int, what: str) -> None:
        if status != 0:
            from lc0_rocm import native_core
            raise NativeSearchError(f"native search: {what}: {native_core.last_error() or status}")

    def _set_forward(self, network) -> None:
        """The network's forward as a C function pointer: the GPU library's
        own entry with a stream of its own, the core's random net, or a
        callback into the numpy backend."""
        ffi = self.ffi
        ev = self._evaluator
        ev.input_format = int(network.input_format)
        ev.has_moves_left = int(bool(getattr(network, "has_moves_left", False)))
        backend = getattr(network, "backend", None)
        self._backend_slots = getattr(backend, "native_slots", None)
        slots = self._backend_slots(1) if self._backend_slots else None
        if slots is not None:
            self._native_slots = list(slots[:1])
            self._slots = [self._c_slot(slots[0])]
            ev.forward, ev.ctx, ev.max_batch = self._slots[0]
            return
        self._backend_slots = None
        if getattr(backend, "name", None) == "random" and getattr(backend, "is_native", False) \
                and not getattr(backend, "delay_ms", 0):
            # The core's own random net: no Python at all per batch.
            ctx = ffi.new("lc0core_random_net*")
            ctx.seed, ctx.uniform = int(backend.seed), int(bool(backend.uniform))
            self._keep.append(ctx)
            ev.forward = ffi.addressof(self.lib, "lc0core_random_forward")
            ev.ctx, ev.max_batch = ctx, 0
            return
        forward_packed = network.forward_packed

        def keep_error(e):
            self._error = e

        forward = python_forward(ffi, forward_packed, keep_error)

        self._keep.append(forward)
        ev.forward, ev.ctx, ev.max_batch = forward, ffi.NULL, 0

    def _c_slot(self, slot) -> tuple:
        """(forward, ctx, max_batch) in C types for a backend's NativeSlot."""
        return c_slot(self.ffi, self.lib, slot, self._keep)

    def _install_evaluator(self) -> None:
        """The evaluator, then one more slot per search thread beyond the
        first where the backend runs several forward calls at once."""
        lib = self.lib
        self._check(lib.lc0core_search_set_evaluator(self._handle, self._evaluator), "evaluator")
        for forward, ctx, max_batch in self._slots[1:self._slots_used]:
            self._check(lib.lc0core_search_add_slot(self._handle, forward, ctx, max_batch), "slot")

    def _use_slots(self, threads: int) -> None:
        """Threads >= 2 on a backend with native slots: a slot per thread
        (taken once, kept), so that many batches are at the network at once."""
        wanted = threads if self._backend_slots and threads >= 2 else 1
        if wanted == self._slots_used:
            return
        if wanted > len(self._slots):
            more = self._backend_slots(wanted - len(self._slots))
            if more is None:
                wanted = 1
            else:
                self._native_slots.extend(more)
                self._slots.extend(self._c_slot(s) for s in more)
        self._slots_used = wanted
        self._install_evaluator()

    def slots_in_use(self, threads: int) -> list:
        """The backend's NativeSlots a search of `threads` search threads
        runs on (taken now where needed); empty for a backend without."""
        self._use_slots(max(1, threads))
        return self._native_slots[:self._slots_used]

    def set_tablebase(self, tablebase) -> None:
        """Syzygy WDL probes from the tree through python-chess's prober."""
        ffi = self.ffi
        ev = self._evaluator
        self._tablebase = tablebase
        if tablebase is None:
            ev.tb_probe, ev.tb_ctx, ev.tb_max_pieces = ffi.NULL, ffi.NULL, 0
        else:
            from lc0_rocm.syzygy import max_pieces

            @ffi.callback("lc0core_tb_probe_fn")
            def probe(_ctx, fen, wdl_out):
                try:
                    wdl = tablebase.get_wdl(chess.Board(ffi.string(fen).decode()))
                except Exception:  # noqa: BLE001 - a failed probe is a miss
                    return 0
                if wdl is None:
                    return 0
                wdl_out[0] = int(wdl)
                return 1

            self._keep.append(probe)
            ev.tb_probe, ev.tb_ctx, ev.tb_max_pieces = probe, ffi.NULL, max_pieces(tablebase)
        self._install_evaluator()

    def set_params(self, params: SearchParams, minibatch: int, threads: int = 1) -> None:
        """The knobs, the resolved minibatch size and thread count (2 or more:
        gather the next batch while the network computes the current one)."""
        lib, h = self.lib, self._handle
        settings = params.native_settings(minibatch, threads)
        key = tuple(settings)
        if key == getattr(self, "_params_key", None):
            return   # unchanged since the last search: ~40 calls saved on every move
        self._params_key = None
        for name, number in settings:
            self._check(lib.lc0core_search_set_option(h, name.encode(), number), name)
        self._use_slots(max(1, threads))
        self._params_key = key

    def new_game(self) -> None:
        self._check(self.lib.lc0core_search_new_game(self._handle), "new game")

    # ------------------------------------------------------------ search
    def run(self, board: chess.Board, params: SearchParams, *, nodes=None, movetime=None,
            time_budget=None, infinite=False, depth=None, mate=None, searchmoves=None,
            stop: threading.Event | None = None, report=None, interval_s: float = 0.5):
        """Search `board` (its move stack is the game) until a limit or
        `stop`; `report()` is called every `interval_s` from the search."""
        ffi, lib, h = self.ffi, self.lib, self._handle
        self._error = None
        root, game = _game_of(board)
        moves = " ".join(m.uci() for m in game)
        self._check(lib.lc0core_search_set_position(
            h, root.fen(shredder=board.chess960, en_passant="fen").encode(), moves.encode(),
            int(board.chess960)), "position")
        limits = ffi.new("lc0core_search_limits*")
        limits.nodes = -1 if nodes is None else int(nodes)
        limits.movetime = -1.0 if movetime is None else float(movetime)
        limits.time_budget = -1.0 if time_budget is None else float(time_budget)
        limits.infinite = int(bool(infinite))
        limits.depth = -1 if depth is None else int(depth)
        limits.mate = -1 if mate is None else int(mate)
        keep = None
        if searchmoves:
            keep = ffi.new("char[]", " ".join(m.uci() for m in searchmoves).encode())
            limits.searchmoves = keep
        ratio, diff = contempt.rescale_params(params)
        limits.rescale_ratio, limits.rescale_diff = ratio, diff
        limits.contempt_mode = contempt.resolve_mode(params, board.turn == chess.BLACK, bool(infinite))
        self.rescale = (ratio, diff, limits.contempt_mode)

        callback = ffi.NULL
        if report is not None:
            @ffi.callback("lc0core_info_fn")
            def callback(_ctx):
                if self._error is not None:
                    return
                try:
                    report()
                except BaseException as e:  # noqa: BLE001 - re-raised after the run
                    self._error = e
                    lib.lc0core_search_stop(h)

        self._error = None
        self._check(lib.lc0core_search_start(h, limits, callback, ffi.NULL, float(interval_s)), "start")
        # The run's thread calls these until it ends, maybe after we return.
        self._running = (callback, keep)
        finished = ffi.new("int*")
        stats = ffi.new("lc0core_search_stats*")
        while True:
            # Waiting in C (no GIL held) in short steps, to see `stop` at once.
            status = lib.lc0core_search_wait(h, STOP_POLL_S, finished)
            if status != 0 and self._error is not None:
                error, self._error = self._error, None
                raise error          # a callback's own exception says more
            self._check(status, "search")
            if finished[0]:
                break
            if stop is not None and stop.is_set():
                lib.lc0core_search_stop(h)
                # Answer now, as lc0 does, once the root has a value: the
                # batch at the network finishes in the background and is
                # waited for before the next change.
                self._check(lib.lc0core_search_get_stats(h, stats), "stats")
                if stats.root_n > 0:
                    break
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def wait_idle(self) -> None:
        """Wait until a stopped run's thread has ended (its last batch back
        from the network), so that the next run starts at once."""
        h = getattr(self, "_handle", None)
        if h is None:
            return
        finished = self.ffi.new("int*")
        while self._wait_fn(h, 0.05, finished) == 0 and not finished[0]:
            pass

    def close(self) -> None:
        """Stop a run still going and wait for its thread (it may be inside
        a Python callback, which needs the GIL we release while waiting)."""
        h = getattr(self, "_handle", None)
        if h is None:
            return
        self._stop_fn(h)
        finished = self._finished
        finished[0] = 0
        while self._wait_fn(h, 0.05, finished) == 0 and not finished[0]:
            pass

    def __del__(self):
        try:
            self.close()
            self._release_slots()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _release_slots(self) -> None:
        """The backend's slots back to it, this search being gone (its run
        ended: close), so that the next search on the network reuses their
        streams rather than making more."""
        slots, self._native_slots = self._native_slots, []
        release = getattr(getattr(self.network, "backend", None), "release_slots", None)
        if slots and release is not None:
            release(slots)

    def run_stats(self) -> dict:
        """The last run's counters (lc0core_search_stats) by name: nodes,
        network calls and the seconds spent at the network, gathering and
        backing up (for profiling the search)."""
        s = self.ffi.new("lc0core_search_stats*")
        self._check(self.lib.lc0core_search_get_stats(self._handle, s), "stats")
        return {name: getattr(s, name) for name, _ in self.ffi.typeof("lc0core_search_stats").fields}

    def tree_fault(self, settle: bool = True) -> str:
        """The last run's tree checked whole (links, visit counts, values):
        the first broken invariant, or "" (for tests of concurrent search).
        `settle`: first wait for the run's thread, which finishes its last
        batch after a `stop` has been answered; else the tree as it is now."""
        if settle:
            finished = self.ffi.new("int*")
            while not finished[0]:
                self._check(self.lib.lc0core_search_wait(self._handle, 0.05, finished), "search")
        out = self.ffi.new("char[]", 256)
        self._check(self.lib.lc0core_search_check_tree(self._handle, out, 256), "check tree")
        return self.ffi.string(out).decode()

    def snapshot(self, count: int) -> Snapshot:
        """Statistics, root edges and the best `count` edges of the last run
        (PVs on demand, until the next run)."""
        ffi, lib, h = self.ffi, self.lib, self._handle
        s = ffi.new("lc0core_search_stats*")
        self._check(lib.lc0core_search_get_stats(h, s), "stats")
        n = max(1, s.num_edges)
        raw = ffi.new("lc0core_root_edge[]", n)
        found = ffi.new("int*")
        self._check(lib.lc0core_search_root_edges(h, raw, n, found), "root edges")
        edges = [RootEdge(chess.Move.from_uci(ffi.string(e.uci).decode()), e.visits, e.in_flight,
                          e.wl, e.d, e.m, e.prior, e.terminal) for e in raw[0:found[0]]]
        best_buf = ffi.new("int[]", max(1, count))
        self._check(lib.lc0core_search_best_edges(h, count, best_buf, found), "best edges")
        best = list(best_buf[0:found[0]])
        snap = Snapshot(s.total_nodes, s.total_playouts, s.cum_depth, s.max_depth, s.tb_hits,
                        s.nn_evals, s.elapsed_ms, s.nps_elapsed_ms, s.root_n, s.root_wl, s.root_d,
                        s.root_m, s.draw_score, s.tree_nodes, s.tree_bytes, edges, best, self.pv)
        return snap

    def pv(self, edge: int) -> list[chess.Move]:
        capacity = 4096
        while True:
            buf = self.ffi.new("char[]", capacity)
            status = self.lib.lc0core_search_pv(self._handle, edge, buf, capacity)
            if status == self.lib.LC0CORE_BUFFER_TOO_SMALL and capacity < 1 << 22:
                capacity *= 8
                continue
            self._check(status, "pv")
            text = self.ffi.string(buf).decode()
            return [chess.Move.from_uci(u) for u in text.split()]


def _game_of(board: chess.Board) -> tuple[chess.Board, list[chess.Move]]:
    """(first position, moves) of the game the core sees: python-chess's
    null moves ("0000") have no place in it, so the game starts after the
    last one."""
    stack = board.move_stack
    nulls = [i for i, move in enumerate(stack) if not move]
    if not nulls:
        return board.root(), stack
    start = board.copy()
    while len(start.move_stack) > nulls[-1] + 1:
        start.pop()
    return start.copy(stack=False), stack[nulls[-1] + 1:]
