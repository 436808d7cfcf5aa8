"""Many positions searched at once on one network, in the native core.

`ManySearch(network, ...).run(rows, nodes=...)` queues the rows as jobs of
the core's search_many (native/core/include/lc0core_search_many.h): K
search handles, each single-threaded on a thread of its own, each job from
a fresh tree. Their network calls go through batching multiplexers
(lc0core_eval_mux.h): a round's batches of all running searches become one
call of the backend. `groups` muxes, each with its own GPU stream (the
backend's native slots), let one group's round compute while the others
gather, so the GPU is not idle while the searches walk their trees.

Batching ("auto" picks): "merge" (one call per round: for backends whose
rows do not depend on the batch: random, sim), "separate" (each search's
batch its own call, as the search alone makes it: numpy's `cpu` rounds
differently by batch size, so this keeps results equal to Engine.search),
"fixed" (merged, in calls of one size, the last padded: GPUs, in calls of
their recommended batch).

Each result is turned into a SearchResult by the same code as
Engine.search's; `SearchFallback` searches with Engine.search one position
at a time where there is no native core.
"""
from __future__ import annotations

import threading

import chess
import numpy as np

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.settings import MAX_SEARCHES, AnalysisError
from lc0_rocm.analysis.sizing import (call_rows, default_groups, default_searches, fitted_minibatch,
                                      memo_answers, spread_order)
from lc0_rocm.backends.base import c_slot, python_forward
from lc0_rocm.errors import InvalidArgumentError
from lc0_rocm.search import contempt
from lc0_rocm.search.native import RootEdge, Snapshot
from lc0_rocm.search_results import wdl_probabilities

BATCHING = ("auto", "merge", "separate", "fixed")
_MODES = {"merge": 0, "fixed": 1, "separate": 2}
WAIT_STEP_S = 0.05
# Knobs analysis fixes: one thread per tree (deterministic), no sampling.
FIXED_OPTIONS = {"Threads": 1, "Temperature": 0, "MultiPV": 1}
# Defaults analysis changes (a user's value wins): no picking helpers, as
# the many searches keep every core busy already (lc0's auto count is 4 a
# search on 16 cores: 1,024 threads beside 256 searches; they change no
# result). No prefetching: lc0 tops a batch short of MaxPrefetch requests
# up with leaves it may visit later, into the NN cache, free where the GPU
# would idle; here each search's cache ends with its job and the mux fills
# the GPU's calls with other searches' rows, so those rows were work thrown
# away (random backend, 400 London positions, 64 searches: rows at the
# network 78,690 -> 40,167 at 100 nodes, 399,646 -> 299,583 at 800). It
# changes a tree a little (a prefetched leaf comes back as a cache hit).
# StrictNodes: a search ends at its node count instead of finishing the
# batch that passes it, rows the GPU would compute for nothing asked.
ANALYSIS_DEFAULTS = {"TaskWorkers": 0, "MaxPrefetch": 0, "StrictNodes": True}


# Bytes first offered a job for its PV (a short search's fits); more are given when asked.
PV_BUFFER = 64


class ManySearchError(AnalysisError):
    """The native multi-search failed (the message says why)."""


def searcher(network, options: dict, *, searches: int | None = None, groups: int | None = None,
             batching: str = "auto", nodes: int | None = None, movetime: float | None = None):
    """A ManySearch, or the Engine.search loop where there is no native core;
    with `nodes`, the minibatch fitted to them (fitted_minibatch); `nodes`
    and `movetime` (seconds) size the shared answers (memo_answers)."""
    from lc0_rocm import native_core
    options = fitted_minibatch(network, options, nodes)
    if native_core.available()[0]:
        return ManySearch(network, options, searches=searches, groups=groups, batching=batching, nodes=nodes,
                          movetime=movetime)
    return SearchFallback(network, options)


def check_options(options: dict) -> dict:
    """`options` (lc0's names) plus FIXED_OPTIONS, each checked: ValueError
    for an unknown name, a bad value or one that analysis fixes."""
    from lc0_rocm.search.params import SearchParams, option_name
    params = SearchParams()
    for given, value in options.items():
        for name in FIXED_OPTIONS:
            if given.lower() == name.lower():
                raise InvalidArgumentError(f"option {given} cannot be set for analysis (it runs {name}={FIXED_OPTIONS[name]})")
        params.set(given, value)
    merged = dict(ANALYSIS_DEFAULTS)
    merged.update({option_name(k): v for k, v in options.items()})
    merged.update(FIXED_OPTIONS)
    return merged


def analysis_engine(network, options: dict):
    """An Engine holding `options` (lc0's names) plus FIXED_OPTIONS; its
    params and result code serve the multi-search."""
    from lc0_rocm.engine import Engine
    # No warm-up: analysis runs its own searches, at one batch size on a GPU.
    return Engine(network, implementation="reference", warm=False, **check_options(options))


class ManySearch:
    def __init__(self, network, options: dict, *, searches: int | None = None, groups: int | None = None,
                 batching: str = "auto", memo: bool = True, nodes: int | None = None,
                 movetime: float | None = None):
        """`nodes`, `movetime`: the limits of the runs to come, when known
        (they size the memo: memo_answers)."""
        from lc0_rocm import native_core
        if batching not in BATCHING:
            raise InvalidArgumentError(f"batching must be one of {', '.join(BATCHING)}, got {batching!r}")
        self.ffi, self.lib = native_core.load()
        self.network = network
        self.engine = analysis_engine(network, options)
        self.params = self.engine.params
        self._keep: list = []
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._open: list[int] = []           # first job of each run not yet collected
        # The searches' own seconds, summed over jobs: where a search thread's time goes.
        self._search_seconds = {"search_gather_s": 0.0, "search_backup_s": 0.0, "search_network_s": 0.0}
        if searches is not None and not 1 <= searches <= MAX_SEARCHES:
            raise InvalidArgumentError(f"searches must be 1..{MAX_SEARCHES}, got {searches}")
        if groups is not None and not 1 <= groups <= 16:
            raise InvalidArgumentError(f"groups must be 1..16, got {groups}")
        gpu = bool(getattr(getattr(network, "backend", None), "device_info", None))
        groups = groups or default_groups(network, gpu)
        sources, default_mode = self._forwards(network, min(groups, searches or groups))
        self.batching = default_mode if batching == "auto" else batching
        self.groups = len(sources)
        self.searches = int(searches or default_searches(network, gpu and default_mode != "separate", self.groups))
        ffi, lib = self.ffi, self.lib
        self._muxes = []
        per_group = [self.searches // self.groups + (g < self.searches % self.groups) for g in range(self.groups)]
        for (forward, ctx, max_batch), clients in zip(sources, per_group):
            if self.batching == "fixed" and max_batch < 1:
                max_batch = 256
            out = ffi.new("lc0core_mux**")
            self._check(lib.lc0core_mux_create(forward, ctx, max_batch, _MODES[self.batching], clients, out), "mux")
            self._muxes.append(ffi.gc(out[0], lib.lc0core_mux_destroy))
            if self.batching != "separate" and max_batch >= 1:
                self._give_call_buffers(out[0], network, max_batch)
        out = ffi.new("lc0core_search_many**")
        self._check(lib.lc0core_search_many_create(self.searches, out), "create")
        self._many = out[0]
        self._closed = False
        self._cancelled = False
        self.memo_answers = memo_answers(self.searches, nodes, movetime)
        self._memo = self._make_memo(memo)
        self._configure(per_group)

    # ------------------------------------------------------------ setup
    def _check(self, status: int, what: str) -> None:
        if status != 0:
            from lc0_rocm import native_core
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            raise ManySearchError(f"analysis search: {what}: {native_core.last_error() or status}")

    def _give_call_buffers(self, mux, network, rows: int) -> None:
        """The mux's call buffers from the backend's host_empty: on a GPU,
        page-locked memory that the forward moves by DMA (a 264-row policy
        block is 2 MB that would otherwise be copied once more on the host)."""
        host_empty = getattr(getattr(network, "backend", None), "host_empty", None)
        if host_empty is None:
            return
        from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE
        arrays = (host_empty((rows, NUM_PLANES), np.uint64), host_empty((rows, NUM_PLANES), np.float32),
                  host_empty((rows, POLICY_SIZE), np.float32), host_empty((rows, 3), np.float32),
                  host_empty(rows, np.float32))
        self._keep.extend(arrays)
        ffi = self.ffi
        pointers = [ffi.cast(kind, ffi.from_buffer(a)) for kind, a in
                    zip(("uint64_t*", "float*", "float*", "float*", "float*"), arrays)]
        self._check(self.lib.lc0core_mux_set_buffers(mux, *pointers, rows), "buffers")

    def _forwards(self, network, groups: int) -> tuple[list[tuple], str]:
        """(forward, ctx, max_batch) per mux group and the batching that suits
        them: the backend's native slots (GPU streams), the core's random
        net, or a callback into the network's forward_packed."""
        ffi, lib = self.ffi, self.lib
        backend = getattr(network, "backend", None)
        take = getattr(backend, "native_slots", None)
        wanted = int(groups)
        slots = take(wanted) if take is not None else None
        if slots:
            self._slots = slots                 # given back to the backend by close()
            forwards = [c_slot(ffi, lib, s, self._keep) for s in slots]
            if getattr(backend, "device_info", None):
                # A GPU's results round by batch size (fp16 sums, GEMM
                # algorithms per shape): calls of one size, the backend's
                # recommended batch, keep every search's results independent
                # of what ran beside it (merged rounds differed in q's 6th
                # digit between 4 and 16 searches on an H200).
                size = call_rows(network, int(backend.attributes().recommended_batch_size))
                return [(forward, ctx, size) for forward, ctx, _ in forwards], "fixed"
            return forwards, "merge"
        if getattr(backend, "name", None) == "random" and getattr(backend, "is_native", False) \
                and not getattr(backend, "delay_ms", 0):
            ctx = ffi.new("lc0core_random_net*")
            ctx.seed, ctx.uniform = int(backend.seed), int(bool(backend.uniform))
            self._keep.append(ctx)
            forward = ffi.addressof(lib, "lc0core_random_forward")
            return [(forward, ctx, 0)] * wanted, "merge"
        forward_packed = network.forward_packed

        def keep_error(e):
            self._error = e

        forward = python_forward(ffi, forward_packed, keep_error)

        self._keep.append(forward)
        # One group: a Python forward holds the GIL, so two would not overlap.
        return [(forward, ffi.NULL, 0)], "separate"

    def _make_memo(self, wanted: bool):
        """The answers the searches share, or None: off when asked, and with
        SEPARATE batching, whose backends (numpy's) answer a row differently
        in a batch of another size, so a shared answer would change a tree."""
        if not wanted or self.batching == "separate":
            return None
        out = self.ffi.new("lc0core_eval_memo**")
        self._check(self.lib.lc0core_eval_memo_create(self.memo_answers, out), "memo")
        return self.ffi.gc(out[0], self.lib.lc0core_eval_memo_destroy)

    def _configure(self, per_group: list[int]) -> None:
        """Every handle: the engine's knobs, one thread, its mux client as
        the evaluator and the client's release after each job."""
        ffi, lib = self.ffi, self.lib
        params = self.params
        minibatch = max(1, self.engine.minibatch_size())
        release = ffi.addressof(lib, "lc0core_mux_release")
        index = 0
        for mux, clients in zip(self._muxes, per_group):
            for c in range(clients):
                h = lib.lc0core_search_many_handle(self._many, index)
                # The knobs the native search reads, as NativeSearch.set_params sets them.
                for name, number in params.native_settings(minibatch, 1):
                    self._check(lib.lc0core_search_set_option(h, name.encode(), number), name)
                client = lib.lc0core_mux_client(mux, c)
                ev = ffi.new("lc0core_evaluator*")
                ev.forward = ffi.addressof(lib, "lc0core_mux_forward")
                ev.forward_wanted = ffi.addressof(lib, "lc0core_mux_forward_wanted")   # only the logits it reads
                ev.ctx, ev.max_batch = client, 0
                ev.input_format = int(self.network.input_format)
                ev.has_moves_left = int(bool(getattr(self.network, "has_moves_left", False)))
                self._check(lib.lc0core_search_set_evaluator(h, ev), "evaluator")
                if self._memo is not None:
                    self._check(lib.lc0core_search_set_memo(h, self._memo), "memo")
                self._check(lib.lc0core_search_many_on_end(self._many, index, release, client), "on_end")
                index += 1

    # ------------------------------------------------------------ running
    def run(self, rows: list[str], *, nodes: int | None = None, movetime: float | None = None,
            progress=None) -> dict[str, np.ndarray]:
        """Searches every row (nodes and/or movetime seconds each); the
        search columns (analysis.columns) in row order. `progress(k)` is
        called as k rows are done. Several threads may run at once (each
        one's jobs queue behind the last's, so the searches never run dry
        between two shards). Rows are searched in spread_order: a
        game's next position after the one before has finished, whose
        answers the memo then holds."""
        if self._closed or self._cancelled:
            raise ManySearchError("cancelled" if self._cancelled else "closed")
        ffi, lib = self.ffi, self.lib
        n = len(rows)
        out = columns.empty(n, "search", 0)
        if n == 0:
            return out
        ratio, diff = contempt.rescale_params(self.params)
        black = [_black_to_move(row) for row in rows]
        order = spread_order(n, self.searches) if self._memo is not None else list(range(n))
        # Every job's limits are one of two (contempt depends on the side to
        # move), copied as bytes rather than set field by field per job.
        one = {}
        for side in (False, True):
            lim = ffi.new("lc0core_search_limits*")
            lim.nodes = -1 if nodes is None else int(nodes)
            lim.movetime = -1.0 if movetime is None else float(movetime)
            lim.time_budget, lim.infinite, lim.depth, lim.mate = -1.0, 0, -1, -1
            lim.searchmoves = ffi.NULL
            lim.rescale_ratio, lim.rescale_diff = ratio, diff
            lim.contempt_mode = contempt.resolve_mode(self.params, side, False)
            one[side] = bytes(ffi.buffer(lim))
        limits = ffi.new("lc0core_search_limits[]", n)
        ffi.buffer(limits)[:] = b"".join(one[black[i]] for i in order)
        text = ("\0".join(rows[i] for i in order) + "\0").encode()
        first = ffi.new("long long*")
        with self._lock:
            self._check(lib.lc0core_search_many_submit(self._many, n, text, len(text), limits, first), "submit")
            start, end = first[0], first[0] + n
            self._open.append(start)
        finished = ffi.new("long long*")
        buffers = _ResultBuffers(ffi)
        reported = collected = 0
        try:
            while True:
                self._check(lib.lc0core_search_many_wait(self._many, end, WAIT_STEP_S, finished), "wait")
                if self._error is not None:
                    lib.lc0core_search_many_cancel(self._many)
                done = min(n, max(0, int(finished[0] - start)))
                # Results are read as their jobs finish (every job below
                # `finished` has), while the rest still search.
                if collected < done and self._error is None and not self._cancelled:
                    self._collect(buffers, start, collected, done - collected, rows, order, black, out,
                                  (ratio, diff))
                    collected = done
                if progress is not None and done > reported:
                    progress(done)
                    reported = done
                if finished[0] >= end:
                    break
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            if self._cancelled:                # stopped searches: not results to keep
                raise ManySearchError("cancelled")
        except BaseException:
            # Ctrl-C or a failure: stop every search (another thread's run
            # ends with "cancelled"); the owner closes.
            self.cancel()
            raise
        with self._lock:
            self._open.remove(start)
            # Results are freed in job order, only below every open run's jobs.
            self._check(lib.lc0core_search_many_forget(self._many, min(self._open, default=end)), "forget")
        return out

    def _collect(self, buffers: "_ResultBuffers", start: int, first: int, count: int, rows: list[str],
                 order: list[int], black: list[bool], out: dict, rescale: tuple) -> None:
        """Jobs start + first .. start + first + count - 1 (finished) into
        their rows of `out`: one native call reads their results, best edges
        and PVs (a short search's result is otherwise mostly cffi calls)."""
        ffi, lib = self.ffi, self.lib
        jobs, best_edges, offsets, pv = buffers.get(count)
        needed = ffi.new("size_t*")
        while True:
            status = lib.lc0core_search_many_results(self._many, start + first, count, jobs, best_edges, pv,
                                                     len(pv), offsets, needed)
            if status != lib.LC0CORE_BUFFER_TOO_SMALL:
                break
            pv = buffers.grow_pv(needed[0])
        self._check(status, "results")
        pvs = ffi.unpack(pv, needed[0]).decode().split("\0")     # job k's is pvs[k]
        gather = backup = network = 0.0
        ratio, diff = rescale
        contempt_of = {side: (ratio, diff, contempt.resolve_mode(self.params, side, False)) for side in (False, True)}
        for k in range(count):
            job = jobs[k]
            i = order[first + k]
            if job.status != 0:
                self._fail(start + first + k, job.status, rows[i], out, i)
                continue
            gather += job.stats.gather_s
            backup += job.stats.backup_s
            network += job.stats.network_s
            if job.outcome != 0:
                exact = columns.EXACT_WDL[job.outcome]
                columns.set_row(out, i, outcome=job.outcome, wdl=exact, q=exact[0] - exact[2])
                continue
            root = _RootPly(rows[i])
            # The result needs the best edge alone (analysis keeps one line and no
            # per-move table); every edge only where a temperature samples among them.
            if self.engine.move_temperature(root) > 0 or job.best_edge < 0:
                edges = self._all_edges(start + first + k, job.num_edges)
                self._fill(job, edges, list(range(len(edges))), pvs[k], root, black[i], out, i,
                           contempt_of[black[i]])
            else:
                self._fill_best(job, best_edges[k], pvs[k], black[i], out, i, contempt_of[black[i]])
        with self._lock:
            times = self._search_seconds
            times["search_gather_s"] += gather
            times["search_backup_s"] += backup
            times["search_network_s"] += network

    def _fail(self, job_id: int, status: int, row: str, out: dict, i: int) -> None:
        """A failed job: the input's fault is reported in its row; else the run fails."""
        ffi, lib = self.ffi, self.lib
        text = ffi.new("char[]", 1024)
        lib.lc0core_search_many_error(self._many, job_id, text, 1024)
        message = ffi.string(text).decode(errors="replace")
        if status in (lib.LC0CORE_BAD_FEN, lib.LC0CORE_ILLEGAL_MOVE):
            columns.set_row(out, i, error=message)       # the input's fault: reported, skipped
            return
        if message == "cancelled":
            raise ManySearchError("cancelled")
        raise ManySearchError(f"search of {row!r} failed: {message}")

    def _all_edges(self, job_id: int, num_edges: int):
        ffi, lib = self.ffi, self.lib
        edges = ffi.new("lc0core_root_edge[]", max(1, num_edges))
        count = ffi.new("int*")
        self._check(lib.lc0core_search_many_edges(self._many, job_id, edges, num_edges, count), "edges")
        return [_root_edge(ffi, edges[k]) for k in range(count[0])]

    def _fill(self, job, root_edges: list[RootEdge], kept: list[int], pv_text: str, root, black: bool,
              out: dict, i: int, rescale: tuple) -> None:
        """Row i from a searched job through the Engine's result code;
        `root_edges` are the root edges numbered `kept`; `rescale` the
        search's (ratio, diff, contempt mode)."""
        pv = [chess.Move.from_uci(u) for u in pv_text.split()]
        snap = _snapshot(job, root_edges, [kept.index(job.best_edge)] if job.best_edge >= 0 else [], pv)
        fill_search_result(out, i, self.engine.result_of(snap, rescale, black, root, None))

    def _fill_best(self, job, edge, pv_text: str, black: bool, out: dict, i: int, rescale: tuple) -> None:
        """Row i from a searched job whose best edge is all the result needs
        (no move temperature): what _fill's SearchResult would put there,
        from the same Engine code for its value and score, without the
        result's other fields (a short search's result is mostly those)."""
        snap = _snapshot(job, [], [], [])        # the root's figures, for an unvisited edge
        _, _, cp, mate = self.engine.line_score(snap, edge, rescale, black)
        wl, d, moves_left = self.engine.best_value(snap, edge)
        columns.set_row(
            out, i, wdl=wdl_probabilities(wl, d), q=wl, moves_left=np.nan if moves_left is None else moves_left,
            score_cp=columns.NO_SCORE if cp is None else cp, mate=0 if mate is None else mate,
            best=self.ffi.string(edge.uci).decode(), pv=" ".join(pv_text.split()), nodes=job.stats.total_nodes)

    def stats(self) -> list[dict]:
        """Per mux group: rounds, calls, rows, busy, gap and wall seconds;
        and, the totals of all groups (the same in each), the shared memo's
        lookups, hits and room (memo_*) and the searches' seconds gathering,
        backing up and in network calls, waiting included (search_*_s,
        summed over the jobs collected), and the search threads' seconds
        waiting for a job, setting one up, searching and keeping results
        (threads_*_s: lc0core_search_many_stats)."""
        with self._lock:
            shared = dict(self._search_seconds)
        if not self._closed:
            t = self.ffi.new("lc0core_search_many_stats*")
            self._check(self.lib.lc0core_search_many_get_stats(self._many, t), "search stats")
            shared |= {"threads_job_wait_s": t.job_wait_s, "threads_setup_s": t.setup_s,
                       "threads_search_s": t.search_s, "threads_result_s": t.result_s, "jobs": t.jobs}
        if self._memo is not None:
            m = self.ffi.new("lc0core_eval_memo_stats*")
            self._check(self.lib.lc0core_eval_memo_get_stats(self._memo, m), "memo stats")
            shared |= {"memo_lookups": m.lookups, "memo_hits": m.hits, "memo_answers": self.memo_answers}
        out = []
        for mux in self._muxes:
            s = self.ffi.new("lc0core_mux_stats*")
            self._check(self.lib.lc0core_mux_get_stats(mux, s), "stats")
            out.append({name: getattr(s, name) for name, _ in self.ffi.typeof("lc0core_mux_stats").fields} | shared)
        return out

    def cancel(self) -> None:
        """Stops the searches (any thread may call it): runs going on end
        with ManySearchError("cancelled"), and so does every later run."""
        if not getattr(self, "_closed", True):
            self._cancelled = True
            self.lib.lc0core_search_many_cancel(self._many)

    def close(self) -> None:
        """Frees the native searches; no run may be going on (cancel first)."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self.lib.lc0core_search_many_destroy(self._many)   # stops and joins the search threads
        self._muxes = []
        self._memo = None                   # after the searches that used it
        slots, self._slots = getattr(self, "_slots", []), []
        if slots:                           # no forward through them now: the muxes are gone
            getattr(self.network.backend, "release_slots", lambda _: None)(slots)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def fill_search_result(out: dict, i: int, result) -> None:
    """Row i of the search columns from an Engine SearchResult."""
    line = result.lines[0] if result.lines else None
    columns.set_row(
        out, i, wdl=result.wdl, q=result.q,
        moves_left=np.nan if result.moves_left is None else result.moves_left,
        score_cp=columns.NO_SCORE if line is None or line.score_cp is None else line.score_cp,
        mate=0 if line is None or line.mate is None else line.mate,
        best=result.best_move.uci() if result.best_move else "",
        pv=" ".join(m.uci() for m in result.pv), nodes=result.nodes)


def _black_to_move(row: str) -> bool:
    fen, _, moves = row.partition(" moves ")
    fields = fen.split()
    black = len(fields) > 1 and fields[1] == "b"
    return black != (len(moves.split()) % 2 == 1)


class _ResultBuffers:
    """One run's buffers for lc0core_search_many_results, grown as needed."""

    def __init__(self, ffi):
        self.ffi = ffi
        self.rows = 0
        self.pv = ffi.new("char[]", PV_BUFFER)

    def get(self, count: int):
        if count > self.rows:
            self.rows = max(count, 2 * self.rows)
            self.jobs = self.ffi.new("lc0core_search_job[]", self.rows)
            self.best_edges = self.ffi.new("lc0core_root_edge[]", self.rows)
            self.offsets = self.ffi.new("size_t[]", self.rows)
            if len(self.pv) < PV_BUFFER * self.rows:
                self.pv = self.ffi.new("char[]", PV_BUFFER * self.rows)
        return self.jobs, self.best_edges, self.offsets, self.pv

    def grow_pv(self, needed: int):
        self.pv = self.ffi.new("char[]", 2 * needed)
        return self.pv


def _snapshot(job, root_edges: list, best: list[int], pv: list) -> Snapshot:
    """A finished job's Snapshot (Engine's result code reads it)."""
    s = job.stats
    return Snapshot(s.total_nodes, s.total_playouts, s.cum_depth, s.max_depth, s.tb_hits, s.nn_evals,
                    s.elapsed_ms, s.nps_elapsed_ms, s.root_n, s.root_wl, s.root_d, s.root_m,
                    s.draw_score, s.tree_nodes, s.tree_bytes, root_edges, best,
                    lambda j: pv if best and j == best[0] else [])


def _root_edge(ffi, e) -> RootEdge:
    return RootEdge(chess.Move.from_uci(ffi.string(e.uci).decode()), e.visits, e.in_flight, e.wl, e.d, e.m,
                    e.prior, e.terminal)


class _RootPly:
    """What Engine's result code reads off the board: the ply, for the move
    temperature (analysis keeps Temperature at 0; TempEndgame may still be
    set). The row's first position gives it as chess.Board would, without
    building one (0.2 ms a position) or replaying the row's moves."""

    def __init__(self, row: str):
        fields = row.partition(" moves ")[0].split()
        try:
            fullmove = max(1, int(fields[5])) if len(fields) > 5 else 1
        except ValueError:
            fullmove = 1
        self._ply = 2 * (fullmove - 1) + (len(fields) > 1 and fields[1] == "b")

    def ply(self) -> int:
        return self._ply


class SearchFallback:
    """Engine.search one position at a time (no native core)."""

    def __init__(self, network, options: dict):
        self.engine = analysis_engine(network, options)
        self.searches, self.groups, self.batching = 1, 1, "separate"

    def run(self, rows: list[str], *, nodes=None, movetime=None, progress=None) -> dict:
        from lc0_rocm.analysis.inputs import board_of_row, row_error
        out = columns.empty(len(rows), "search", 0)
        for i, row in enumerate(rows):
            why = row_error(row)
            if why:
                columns.set_row(out, i, error=why)
                continue
            board = board_of_row(row)
            if not any(True for _ in board.legal_moves):
                code = 1 if board.is_check() else 2
                exact = columns.EXACT_WDL[code]
                columns.set_row(out, i, outcome=code, wdl=exact, q=exact[0] - exact[2])
            else:
                self.engine.new_game()
                fill_search_result(out, i, self.engine.search(board, nodes=nodes, movetime=movetime))
            if progress is not None:
                progress(i + 1)
        return out

    def stats(self) -> list[dict]:
        return []

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass
