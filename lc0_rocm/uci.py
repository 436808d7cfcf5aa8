"""The UCI engine: `lc0-rocm` with no arguments (or `lc0-rocm uci`).

Protocol as lc0 v0.32.1 speaks it (src/chess/uciloop.cc, src/engine.cc):
uci, isready, setoption, ucinewgame, position, go, stop, ponderhit, quit
(plus debug, wait, xyzzy). The search runs on a worker thread, so the input
thread keeps answering (isready, stop, ponderhit) while it searches.

Errors never end the engine: a bad command, FEN, move, option or a missing
net gets an `info string error ...` line and the engine keeps serving.

What a GUI can count on, whatever the search underneath does:
- every `go` is answered by exactly one `bestmove`, in order: a `go`,
  `position`, `ucinewgame` or `quit` during a search stops it first and its
  bestmove is sent (lc0's rule); a `go` that cannot search (bad arguments, no
  net, no valid position) answers an error and `bestmove (none)`;
- every `isready` is answered by `readyok`;
- `go infinite` and `go ponder` send their bestmove only after `stop` (or
  `ponderhit`), even when there is nothing to search;
- a rejected `position` is never searched: `go` answers an error and
  `bestmove (none)` until a valid `position` arrives;
- end of input (the GUI quit or died) stops the search and ends the process.

`UciEngine` is the protocol state machine; it takes an output function, an
engine class (default lc0_rocm.engine.Engine) and a network loader (default
lc0_rocm.network.load_network), so tests can drive it in-process with fakes.
"""
from __future__ import annotations

import dataclasses
import sys
import threading
import time
from typing import Callable

import chess

from lc0_rocm import __version__, native_rules, netfiles, syzygy, uci_build
from lc0_rocm.backends import blas_threads
from lc0_rocm.timemanager import LegacyTimeManager
from lc0_rocm.uci_job import SearchJob, bestmove_line
from lc0_rocm.uci_limits import accepts_keyword, ponderhit_budget_ms, search_limits, searchmoves
from lc0_rocm.uci_options import (AUTODISCOVER, UCI_FALLBACK_OPTIONS, UCI_OPTIONS, OptionSpec,
                                  as_spec, option_line, parse_backend_options, parse_value)
from lc0_rocm.uci_output import IoLog, format_info, verbose_move_stats
from lc0_rocm.uci_parse import GoParams, UciError, echo, parse_go, parse_setoption, play_position
from lc0_rocm.uci_tablebase import TablebaseSlot

ENGINE_NAME = f"lc0-rocm v{__version__}"
BESTMOVE_GAP_S = 0.005   # UciEngine.send: the least time between a bestmove and the line before it
ENGINE_AUTHOR = "The lc0-rocm authors (after Leela Chess Zero by The LCZero Authors)"

# ------------------------------------------------------------------ search jobs

def _default_engine_class():
    from lc0_rocm.engine import Engine
    return Engine


def _default_network_loader(path, backend="auto", **options):
    from lc0_rocm.network import load_network
    return load_network(path, backend=backend, **options)


# ------------------------------------------------------------------ the engine

class UciEngine:
    """UCI protocol state: options, position, network, search jobs."""

    def __init__(self, output: Callable[[str], None], *,
                 engine_class=None, network_loader=None, cwd=None, io_log: IoLog | None = None):
        self._raw_output = output
        self._out_lock = threading.Lock()
        self._job_lock = threading.Lock()
        self.log = io_log or IoLog()
        self.cwd = cwd
        self._network_loader = network_loader or _default_network_loader
        if engine_class is None:
            try:
                engine_class = _default_engine_class()
            except Exception as e:  # a broken search module must not stop the protocol
                engine_class = None
                self._engine_import_error = f"{type(e).__name__}: {e}"
        self.engine_class = engine_class

        self.specs: dict[str, OptionSpec] = dict(UCI_OPTIONS)
        engine_specs = {name: as_spec(spec) for name, spec in
                        (getattr(engine_class, "OPTIONS", None) or {}).items()}
        for name, spec in UCI_FALLBACK_OPTIONS.items():
            if name not in engine_specs:
                self.specs[name] = spec
        for name, spec in engine_specs.items():
            if name not in UCI_OPTIONS:
                self.specs[name] = spec
        self.engine_option_names = set(engine_specs) - set(UCI_OPTIONS)
        self.values = {name: spec.default for name, spec in self.specs.items()}

        self.board: chess.Board | None = None
        self.position_error: str | None = None   # why the last `position` was rejected
        self.position_time = time.monotonic()
        self._weights: tuple | None = None       # (path, None) or (None, why not): WeightsFile resolved
        self.closed = False                      # quit, or the GUI stopped reading
        self.network = None
        self.engine = None
        self._net_key = None
        self._dirty_engine_options: set[str] = set()
        self.tablebases = TablebaseSlot()
        self.tm = self._new_time_manager()
        self.debug = False
        self._job: SearchJob | None = None
        self._position_key: tuple | None = None   # (chess960, head, moves) of self.board
        self.native_build = uci_build.NativeBuild()
        self.on_output_lost: Callable[[], None] | None = None   # main(): stop reading input
        self._output_lost = False
        self._last_output = 0.0

    # ---------------------------------------------------------- output

    def send(self, line: str) -> None:
        with self._out_lock:
            if line.startswith("bestmove"):
                # A GUI that waits for readiness (select/poll) and then reads
                # through a buffer sees only the first of two lines that
                # arrive in one read; the bestmove left in its buffer would
                # wait for the GUI's next input. A moment after the line
                # before it, the bestmove arrives in a read of its own.
                pause = self._last_output + BESTMOVE_GAP_S - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            self.log.write("<<", line)
            self._raw_output(line)
            self._last_output = time.monotonic()

    def note(self, message: str) -> None:
        """A message for the user, not the GUI: stderr (as lc0 does) and LogFile."""
        self.log.write("##", message)
        try:
            print(message, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass

    def error(self, message: str) -> None:
        self.send(f"info string error {message}")

    # ---------------------------------------------------------- dispatch

    COMMANDS = ("uci", "isready", "setoption", "ucinewgame", "position", "go", "stop",
                "ponderhit", "quit", "debug", "wait", "xyzzy", "register")

    def handle(self, line: str) -> bool:
        """Process one input line; False after `quit` (or once the output is
        lost). Never raises."""
        line = line.rstrip("\r\n").lstrip("\ufeff")   # a byte-order mark may lead the first line
        self.log.write(">>", line)
        tokens = line.split()
        # UCI: skip unknown tokens in front of a command
        start = next((i for i, t in enumerate(tokens) if t in self.COMMANDS), None)
        if not tokens:
            return not self.closed
        if start is None:
            self.error(f"Unknown command: {echo(line.strip())}")
            return not self.closed
        command, args = tokens[start], tokens[start + 1:]
        if command == "quit":
            self.shutdown()
            return False
        try:
            if command == "setoption":
                self.set_option(*parse_setoption(line))
            else:
                getattr(self, "_cmd_" + command)(args)
        except Exception as e:
            self._report(command, e)
        return not self.closed

    def _report(self, command: str, e: Exception) -> None:
        """An error line for a command that failed."""
        if isinstance(e, UciError):
            self.error(str(e))
        else:  # a bug must not kill the engine
            self.error(f"internal error in {command}: {type(e).__name__}: {echo(str(e))}")

    # ---------------------------------------------------------- commands

    def _cmd_uci(self, args):
        self._start_native_build()   # builds (first start only) while the GUI reads the options
        self.send(f"id name {ENGINE_NAME}")
        self.send(f"id author {ENGINE_AUTHOR}")
        for name, spec in self.specs.items():
            self.send(option_line(name, spec))
        self.send("uciok")

    def _cmd_isready(self, args):
        try:
            if not self._searching():
                self._await_native_build()
                self.ensure_engine()
        except Exception as e:   # whatever fails, the GUI gets its readyok
            self._report("isready", e)
        self.send("readyok")

    def _cmd_debug(self, args):
        self.debug = not args or args[0] != "off"

    def _cmd_register(self, args):
        pass  # nothing to register; UCI GUIs may send it

    def _cmd_xyzzy(self, args):
        self.send("Nothing happens.")

    def _cmd_wait(self, args):
        """lc0's `wait`: block until the running search ends by itself."""
        job = self._job
        if job is None or job.thread is None:
            return
        if (job.hold or job.unbounded) and not job.stop_requested:
            raise UciError("wait: the search only ends on stop")
        job.thread.join()

    def _cmd_ucinewgame(self, args):
        self._finish_job()
        if self.engine is not None:
            self.engine.new_game()
        self.tm = self._new_time_manager()
        self.board, self._position_key = None, None
        self.position_time = time.monotonic()

    def _cmd_position(self, args):
        self._finish_job()
        previous, previous_key = self.board, self._position_key
        self.board, self._position_key = None, None
        # until this one is accepted, no position is valid: never search one the GUI did not send
        self.position_error = "position rejected"
        self.position_time = time.monotonic()
        chess960 = bool(self.values["UCI_Chess960"])
        try:
            board, key, continues = play_position(args, chess960, previous, previous_key)
        except UciError as e:
            self.position_error = f"the last position was rejected ({e})"
            raise UciError(f"{e}; go answers bestmove (none) until a valid position") from None
        if not continues:
            self.tm = self._new_time_manager()
        self.board, self._position_key, self.position_error = board, key, None

    def _cmd_stop(self, args):
        job = self._job
        if job is not None:
            job.stop_requested = True
            job.halt()

    def _cmd_ponderhit(self, args):
        job = self._job
        if job is None or not job.go.ponder or job.thread is None or job.stop_requested:
            raise UciError("ponderhit while not pondering")
        go = dataclasses.replace(job.go, ponder=False)
        self.position_time = now = time.monotonic()  # the clock restarts on ponderhit
        budget_ms = ponderhit_budget_ms(go, job.board, self.tm, int(self.values["MoveOverheadMs"]))
        if budget_ms is not None:
            # The ponder search goes on as this move's search, stopped when
            # the budget (from now) is spent: a restart would first wait for
            # the ponder search's last batch, on our clock.
            job.clock_start, job.ponder_hit, job.go = now, True, go   # its time is this move's
            left_s = max(0.0, budget_ms) / 1000.0 - (time.monotonic() - now)
            if left_s > 0:
                job.timer = threading.Timer(left_s, job.stop.set)
                job.timer.daemon = True
                job.timer.start()
            else:
                job.stop.set()
            job.release.set()
            return
        with self._job_lock:
            job.silent = True   # the search below answers this `go`
        self._finish_job()
        self._search_or_answer(lambda: self._start_search(job.board, go))

    def _cmd_go(self, args):
        self._finish_job()   # a `go` during a search: that one gets its bestmove first
        if args[:1] == ["perft"]:
            try:
                return self._go_perft(args[1:])
            except UciError as e:   # a go that cannot count: an error and its bestmove
                self._report("go", e)
                self.send("bestmove (none)")
                return None

        def start():
            go = parse_go(args)
            if go.ignored:
                self.error(f"go: unexpected tokens ignored: {echo(' '.join(go.ignored))}")
            if self.position_error is not None:
                raise UciError(f"go: no valid position: {self.position_error}")
            if self.native_build.busy():   # a go before isready: the build started at uci
                self._await_native_build()
            if not go.has_clock() or go.ponder:
                self.position_time = time.monotonic()
            # the board itself, not a copy (O(game length)): `position`
            # finishes this job before it plays more moves on it
            board = self.board if self.board is not None else chess.Board(
                chess960=bool(self.values["UCI_Chess960"]))
            self._start_search(board, go)

        self._search_or_answer(start)

    def _search_or_answer(self, start: Callable[[], None]) -> None:
        """Run `start`, which either starts a job (that owes the bestmove) or
        raises; on any failure the `go` is answered here."""
        try:
            start()
        except Exception as e:
            self._report("go", e)
            if self._job is None:
                self.send("bestmove (none)")

    def _go_perft(self, args):
        """`go perft N`: Stockfish's move counts of the current position."""
        if self.position_error is not None:
            raise UciError(f"go perft: no valid position: {self.position_error}")
        board = self.board if self.board is not None else chess.Board(
            chess960=bool(self.values["UCI_Chess960"]))
        try:
            lines = native_rules.perft_report(board, args)
        except ValueError as e:
            raise UciError(str(e)) from None
        for line in lines:
            self.send(line)

    # ---------------------------------------------------------- options

    def set_option(self, name: str, text: str) -> None:
        canonical = next((n for n in self.specs if n.lower() == name.lower()), None)
        if canonical is None:
            raise UciError(f"Unknown option: {echo(name)}")
        spec = self.specs[canonical]
        try:
            value = parse_value(canonical, spec, text)
        except ValueError as e:
            raise UciError(str(e)) from None
        if canonical == "WeightsFile":
            self.values[canonical] = value
            self._resolve_weights()
        elif canonical == "LogFile":
            self.log.open(value)
        elif canonical == "SyzygyPath":
            try:
                summary = self.tablebases.open(value)
            except syzygy.SyzygyError as e:
                self.values[canonical] = value
                raise UciError(str(e)) from None
            if summary:
                self.send(f"info string {summary}")
        elif canonical == "BackendOptions":
            try:
                parse_backend_options(value)
            except ValueError as e:
                raise UciError(str(e)) from None
        self.values[canonical] = value
        if canonical in ("MoveOverheadMs", "Slowmover"):
            self.tm.move_overhead_ms = int(self.values["MoveOverheadMs"])
            self.tm.slowmover = float(self.values["Slowmover"])
        if canonical in self.engine_option_names:
            self._dirty_engine_options.add(canonical)
            if self.engine is not None and not self._searching():
                self._apply_engine_options()

    def _apply_engine_options(self) -> None:
        pending, self._dirty_engine_options = self._dirty_engine_options, set()
        for name in sorted(pending):
            try:
                self.engine.set_option(name, self.values[name])
            except ValueError as e:
                raise UciError(str(e)) from None

    def _resolve_weights(self) -> None:
        """Find the WeightsFile (discovery for <autodiscover>) once, when the
        option is set or first needed, as lc0 does: a net file appearing
        later in the folder does not switch nets mid-game."""
        value = self.values["WeightsFile"]
        try:
            self._weights = (netfiles.resolve_weights(value, self.cwd), None)
        except netfiles.NetNotFoundError as e:
            self._weights = (None, str(e))
        except (OSError, ValueError) as e:   # a name too long, a folder we may not read, ...
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            self._weights = (None, f"WeightsFile {echo(str(value))}: {type(e).__name__}: {echo(reason)}")

    def _start_native_build(self) -> None:
        """Build the native libraries the Backend needs, in the background
        (nothing to do once they are in the cache)."""
        if self._network_loader is not _default_network_loader:
            return   # tests' fake nets need no native library
        try:
            options = parse_backend_options(self.values["BackendOptions"])
        except ValueError:
            options = {}
        self.native_build.start(str(self.values["Backend"]), options)

    def _await_native_build(self) -> None:
        """The build started at `uci` (or now), waited for with `info string`
        progress lines at least every 5 s."""
        self._start_native_build()
        self.native_build.wait(lambda line: self.send(f"info string {line}"))

    def _new_time_manager(self) -> LegacyTimeManager:
        values = getattr(self, "values", {})
        return LegacyTimeManager(int(values.get("MoveOverheadMs", 200)),
                                 float(values.get("Slowmover", 1.0)))

    # ---------------------------------------------------------- network + engine

    def ensure_engine(self):
        """Load the net (lazily, again when WeightsFile/Backend/BackendOptions
        change) and build the engine; UciError with advice when impossible."""
        if self.engine_class is None:
            raise UciError(f"the search engine is not available: {getattr(self, '_engine_import_error', '?')}")
        if self._weights is None or self._weights[0] is None:
            self._resolve_weights()   # at start, or again while no net was found
        path, problem = self._weights
        backend = self.values["Backend"]
        # lc0's random backend needs no net, but a WeightsFile the user named
        # must still be there.
        if path is None and (backend != "random" or self.values["WeightsFile"] != AUTODISCOVER):
            raise UciError(problem)
        backend_options = parse_backend_options(self.values["BackendOptions"])
        key = (str(path), backend, tuple(sorted(backend_options.items())))
        if self.engine is not None and key == self._net_key:
            if self._dirty_engine_options:
                self._apply_engine_options()
            self.tablebases.sync(self.engine)
            return self.engine
        if self._network_loader is _default_network_loader:
            note = blas_threads.settle_for_backend(backend)
            if note:
                self.note(note)
        try:
            network = self._network_loader(None if path is None else str(path), backend=backend,
                                           backend_opts=backend_options)
        except Exception as e:  # bad file, unavailable backend, ...
            raise UciError(f"cannot load {path} with backend {backend}: {type(e).__name__}: {e}") from None
        if self.engine is None:
            options = {name: self.values[name] for name in self.engine_option_names
                       if self.values[name] != self.specs[name].default}
            try:
                self.engine = self.engine_class(network, **options)
            except ValueError as e:
                raise UciError(str(e)) from None
            if hasattr(self.engine, "movetime_limit_s"):
                self.engine.movetime_limit_s = None   # `go movetime` comes in ms: its seconds are meant
            self._dirty_engine_options.clear()
        else:
            self.engine.set_network(network)
            self._apply_engine_options()
        self.network, self._net_key = network, key
        self.tablebases.engine_replaced()
        self.tablebases.sync(self.engine)
        backend_obj = getattr(network, "backend", None)
        backend_name = getattr(backend_obj, "name", None) or backend_obj or backend
        self.note(f"Loaded weights file from: {path or '<none>'} (backend {backend_name})")
        return self.engine

    # ---------------------------------------------------------- searching

    def _searching(self) -> bool:
        job = self._job
        return job is not None and job.thread is not None and job.thread.is_alive()

    def _finish_job(self) -> None:
        """End the current job: stop its search, release its bestmove and
        wait until it is sent (lc0: a new command stops the search first)."""
        job = self._job
        if job is None:
            return
        job.halt()
        if job.thread is not None:
            job.thread.join()
        self._job = None

    def shutdown(self) -> None:
        """quit or end of input: stop whatever runs (its bestmove is still
        sent, to whoever may hear it) and close the log."""
        self.closed = True
        try:
            self._finish_job()
        finally:
            self.log.close()

    def output_lost(self) -> None:
        """The GUI no longer reads (its pipe is closed): stop searching for
        nobody. Called from any thread, the search's own included."""
        first = not self._output_lost
        self._output_lost = self.closed = True
        job = self._job
        if job is not None:
            job.halt()
        if first and self.on_output_lost is not None:
            self.on_output_lost()

    def _no_move(self, board: chess.Board) -> None:
        """A root with no legal move: report the result (`bestmove (none)`
        follows when the job is released)."""
        if board.is_checkmate():
            self.send("info depth 0 score mate 0")
        else:
            self.send("info depth 0 score cp 0")

    def _start_search(self, board: chess.Board, go: GoParams) -> None:
        """Start the job for `go` on `board`; UciError when it cannot search."""
        if not any(board.legal_moves):
            self._start_job(board, go, lambda job, on_info: self._no_move(board), inline=True)
            return
        engine = self.ensure_engine()
        kwargs: dict = {}
        candidates = searchmoves(board, go.searchmoves) if go.searchmoves else None
        tb_moves, tbhits = syzygy.root_moves(self.tablebases.tables, board, candidates)
        if tb_moves is not None:
            candidates = tb_moves
        if candidates is not None:
            kwargs["searchmoves"] = candidates

        wait_idle = getattr(engine, "wait_idle", None)
        if wait_idle is not None:
            wait_idle()   # a stopped search's last batch: waited for here, so that it counts below
        kwargs.update(search_limits(go, board, self.tm,
                                    elapsed_ms=(time.monotonic() - self.position_time) * 1000.0,
                                    move_overhead_ms=int(self.values["MoveOverheadMs"]),
                                    accepts_depth=go.depth is not None and accepts_keyword(engine.search, "depth")))

        if self.debug:
            shown = {k: (v if not isinstance(v, list) else [m.uci() for m in v]) for k, v in kwargs.items()}
            settings = {n: self._engine_value(n) for n in sorted(self.engine_option_names)}
            self.send(f"info string debug search {shown} options {settings} "
                      f"weights {self._net_key[0]} backend {self._net_key[1]} "
                      f"engine network {getattr(engine, 'network', None)!r}")

        def run(job: SearchJob, on_info):
            return engine.search(job.board, stop=job.stop, on_info=on_info, **kwargs)

        inline = kwargs.get("nodes") == 1 and not kwargs.get("infinite") and "depth" not in kwargs
        self._start_job(board, go, run, inline=inline, extra_tbhits=tbhits,
                        unbounded=bool(kwargs.get("infinite")),
                        search_does_depth="depth" in kwargs)

    def _start_job(self, board: chess.Board, go: GoParams, run, *, inline: bool = False,
                   **fields) -> None:
        """The worker thread that answers one `go`: run(job, on_info) gives
        the search result (None: nothing to play). `inline`: a search of a
        node or none, answered here on the input thread, since handing it
        to a thread costs more than the search (milliseconds of a clock
        that is nearly gone)."""
        hold = go.infinite or go.ponder
        job = SearchJob(board=board, go=go, stop=threading.Event(), release=threading.Event(),
                   hold=hold, clock_start=self.position_time, **fields)
        if not hold:
            job.release.set()
            if inline:
                self._job = None
                self._run_job(job, run)
                return
        job.thread = threading.Thread(target=self._run_job, args=(job, run),
                                      name="lc0-rocm-search", daemon=True)
        self._job = job
        job.thread.start()

    def _engine_value(self, name: str):
        """An option's value as the engine holds it (for `debug on`)."""
        params = getattr(self.engine, "params", None)
        values = getattr(params, "values", None) or getattr(self.engine, "options", None) or {}
        return values.get(name, self.values[name])

    def _run_job(self, job: SearchJob, run) -> None:
        go = job.go
        try:
            show_wdl = bool(self.values["UCI_ShowWDL"])
            show_ml = bool(self.values["UCI_ShowMovesLeft"])
            multipv = int(self.values.get("MultiPV", 1) or 1) > 1

            def on_info(info):
                if job.silent:
                    return
                self.send(format_info(info, show_wdl=show_wdl, show_moves_left=show_ml,
                                      multipv=multipv, extra_tbhits=job.extra_tbhits))
                if job.reached_goal(info):   # go depth / go mate, when the search does not stop there
                    job.stop.set()

            result = None
            try:
                result = run(job, on_info)
            except Exception as e:
                self.error(f"search failed: {type(e).__name__}: {echo(str(e))}")
            if job.timer is not None:
                job.timer.cancel()
            used_ms = (time.monotonic() - job.clock_start) * 1000.0
            if not go.ponder or job.ponder_hit:
                self.tm.search_done(used_ms)
            job.release.wait()
            with self._job_lock:
                if job.silent:
                    return
                if result is not None and self.values.get("VerboseMoveStats"):
                    for line in verbose_move_stats(result, job.board):
                        self.send(line)
                line, problem = bestmove_line(job.board, result)
                if problem:
                    self.error(problem)
                self.send(line)
        except Exception as e:   # whatever went wrong, the `go` is answered
            self._report("go", e)
            with self._job_lock:
                if not job.silent:
                    self.send("bestmove (none)")
