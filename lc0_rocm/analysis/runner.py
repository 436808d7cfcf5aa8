"""A whole analysis run: plan, shards computed by workers (this process,
one local process per GPU, or Ray actors), shard files kept until the
outputs are written, progress on stderr.

Workers: `workers` 1 computes in this process; more start that many local
processes (with a GPU backend each its own GPU, `gpu=i`); AUTO one per GPU
(the command's default); `ray` runs Ray actors instead
(analysis.ray_runner). Every path computes the same shards from the same
plan, so the outputs are the same bytes.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import multiprocessing
import os
import queue
import sys
import threading
import time
from typing import Iterator

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.background import close_when_done, in_background
from lc0_rocm.analysis.inputs import Selection
from lc0_rocm.analysis.plan import Plan, WorkDir, build_plan, default_shard_size
from lc0_rocm.analysis.settings import NetSource, Settings, WorkerError
from lc0_rocm.analysis.worker import SHARDS_IN_FLIGHT, ShardWorker, process_main
from lc0_rocm.analysis import writers

GPU_PREFIXES = ("rocm", "cuda")


@dataclasses.dataclass
class RunResult:
    positions: int          # occurrences read (those refused included: see `refused`)
    distinct: int           # rows computed (or found finished)
    errors: int
    outputs: dict[str, int]
    seconds: float
    computed: int           # rows computed by this run (not resumed)
    mux: list[dict] = dataclasses.field(default_factory=list)
    refused: int = 0        # of the distinct rows, those the engine refused (an impossible position)


def parts_dir(output: str) -> str:
    return output + ".parts"


def errors_path(output: str) -> str:
    return output + ".errors"


def gpu_count(backend: str) -> int:
    """GPUs the backend's library sees (0 for non-GPU backends)."""
    from lc0_rocm import backends
    name = backends.resolve(backend)
    if not name.startswith(GPU_PREFIXES):
        return 0
    from lc0_rocm.backends import native
    vendor, _ = native.split_name(name)
    ffi, lib = native.load_library(native.build(vendor))
    count = ffi.new("int*")
    native.check(ffi, lib, lib.lc0rocm_get_device_count(count), "device count")
    return int(count[0])


# workers=AUTO: a worker per GPU the backend sees (one on the CPU and for
# backends that spread over GPUs themselves), decided beside the planning.
AUTO = "auto"
SPREADING_BACKENDS = ("demux", "roundrobin", "multiplexing")


def auto_workers(backend: str) -> int:
    if backend.startswith(SPREADING_BACKENDS):
        return 1
    return max(1, gpu_count(backend))


def worker_options(source: NetSource, workers: int) -> list[str]:
    """Per worker backend options: its own GPU where there are several."""
    if workers <= 1:
        return [""]
    if gpu_count(source.backend) >= workers:
        if "gpu=" in source.backend_opts or "device=" in source.backend_opts:
            raise ValueError("several workers pick a GPU each: leave gpu= out of the backend options")
        return [f"gpu={i}" for i in range(workers)]
    return [""] * workers


class Progress:
    """Positions done out of all, with positions/s and ETA: a tqdm bar on a
    terminal, else a line per finished shard."""

    def __init__(self, total: int, done: int, shards: int, stream=None):
        self.total, self.done, self.shards = total, done, shards
        self.stream = stream or sys.stderr
        self.started, self.start_done = time.monotonic(), done
        self.partial: dict[int, int] = {}
        self.finished_shards = 0
        self.bar = None
        self.lock = threading.Lock()
        if getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=done, unit="pos", desc="analyse", file=self.stream,
                            dynamic_ncols=True, smoothing=0.1)

    def shard_progress(self, k: int, count: int) -> None:
        with self.lock:
            step = count - self.partial.get(k, 0)
            self.partial[k] = count
            if self.bar is not None and step > 0:
                self.bar.update(step)

    def shard_done(self, k: int, size: int) -> None:
        with self.lock:
            step = size - self.partial.pop(k, 0)
            self.done += size
            self.finished_shards += 1
            if self.bar is not None:
                self.bar.update(step)
                return
            elapsed = time.monotonic() - self.started
            rate = (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            eta_text = time.strftime("%H:%M:%S", time.gmtime(eta)) if eta == eta else "?"
            print(f"analyse: shard {k + 1} done ({self.finished_shards}/{self.shards} this run), "
                  f"{self.done}/{self.total} positions, {rate:.1f} pos/s, ETA {eta_text}",
                  file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------- executors
def _in_process(plan: Plan, todo: list[int], settings: Settings, source: NetSource, searches, groups,
                network, progress: Progress, mux: list) -> Iterator[tuple[int, dict]]:
    worker = ShardWorker(settings, network=network, source=source, searches=searches, groups=groups)
    try:
        if settings.mode == "eval" or len(todo) < 2:
            for k in todo:
                yield k, worker.compute(plan.shard_rows(k), progress=lambda c, k=k: progress.shard_progress(k, c))
        else:
            # Shards queued ahead: the next ones' searches start while the
            # last of this one's finish, and the searches still have jobs
            # while this one's results are read and saved.
            with concurrent.futures.ThreadPoolExecutor(SHARDS_IN_FLIGHT, thread_name_prefix="lc0-rocm-shard") as pool:
                try:
                    pending = {}
                    for k in todo:
                        pending[k] = pool.submit(worker.compute, plan.shard_rows(k),
                                                 lambda c, k=k: progress.shard_progress(k, c))
                        if len(pending) == SHARDS_IN_FLIGHT:
                            first = next(iter(pending))
                            yield first, pending.pop(first).result()
                    for k, future in pending.items():
                        yield k, future.result()
                except BaseException:      # Ctrl-C, a failure, or the caller stopped: end both runs now
                    worker.cancel()
                    raise
        mux.extend(worker.stats())
    finally:
        worker.close()


def _processes(plan: Plan, todo: list[int], settings: Settings, source: NetSource, searches, groups,
               workers: int, progress: Progress) -> Iterator[tuple[int, dict]]:
    context = multiprocessing.get_context("spawn")
    tasks, results = context.Queue(), context.Queue()
    extra = worker_options(source, workers)
    procs = [context.Process(target=process_main, name=f"lc0-rocm-analyse-{i}", daemon=True,
                             args=(i, settings, source, extra[i], searches, groups, tasks, results, os.getpid()))
             for i in range(workers)]
    for p in procs:
        p.start()
    for k in todo:
        tasks.put((k, plan.shard_rows(k)))
    for _ in procs:
        tasks.put(None)
    remaining = set(todo)
    try:
        while remaining:
            try:
                kind, key, payload = results.get(timeout=0.5)
            except queue.Empty:
                dead = [p for p in procs if not p.is_alive() and p.exitcode not in (0, None)]
                if dead:
                    raise WorkerError(f"worker {dead[0].name} died (exit code {dead[0].exitcode})") from None
                if not any(p.is_alive() for p in procs):
                    raise WorkerError("every worker ended with shards left") from None
                continue
            if kind == "error":
                raise WorkerError(payload)
            if kind == "progress":
                progress.shard_progress(key, payload)
            elif kind == "done":
                remaining.discard(key)
                yield key, payload
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=10)


# ---------------------------------------------------------------- the run
def run(inputs: list[str], outputs: list[str], settings: Settings, source: NetSource, *,
        kind: str | None = None, workers: int | None = None, searches: int | None = None,
        groups: int | None = None,
        ray_address: str | None = None, use_ray: bool = False, shard_size: int | None = None,
        network=None, stream=None) -> RunResult:
    """Analyse `inputs` into `outputs` (formats by name: .jsonl, .parquet,
    .pgn). Resumes from `<outputs[0]>.parts/` when a run with the same
    settings left shards there."""
    started = time.monotonic()
    if not outputs:
        raise ValueError("no output given")
    for path in outputs:
        if writers.format_of(path) == "parquet":
            writers.require_pyarrow()
    if shard_size is None:
        shard_size = default_shard_size(settings.mode)
    # The net's hash (a big net's file read whole; hashlib lets go of the
    # GIL) and the workers: how many (counting GPUs loads their library) and,
    # when this process computes, its network (a GPU's set-up is mostly
    # outside the GIL), on threads of their own while the inputs are read
    # and planned.
    net_identity = in_background(source.identity)
    preparing = in_background(_prepare_workers, source, workers, use_ray, network is None)
    try:
        plan = build_plan(inputs, kind, Selection(settings.every, settings.played), shard_size)
        # A sign of life before a big database's first shard, and where its time went.
        print(f"analyse: {len(plan.positions)} positions ({len(plan.rows)} distinct, {plan.num_shards} "
              f"shard(s)) read in {time.monotonic() - started:.1f} s", file=stream or sys.stderr, flush=True)
        manifest = {"settings": settings.identity(), "net": net_identity.result(), "rows": len(plan.rows),
                    "rows_sha256": plan.digest, "shard_size": shard_size}
        ShardWorker.import_engine(settings)     # while the network loads
        workers, loaded = preparing.result()
        in_process = not use_ray and workers <= 1
        workdir = WorkDir(parts_dir(outputs[0]))
        workdir.open(manifest)
        mux: list = []
        try:
            done = workdir.done(plan)
            todo = [k for k in range(plan.num_shards) if k not in done]
            done_rows = sum(len(plan.shard_rows(k)) for k in done)
            progress = Progress(len(plan.rows), done_rows, len(todo), stream)
            stream_ = None
            try:
                if todo:
                    if use_ray:
                        from lc0_rocm.analysis import ray_runner
                        stream_ = ray_runner.compute(plan, todo, settings, source, ray_address, workers,
                                                     searches, groups, progress)
                    elif in_process:
                        stream_ = _in_process(plan, todo, settings, source, searches, groups,
                                              network or loaded.network(), progress, mux)
                    else:
                        stream_ = _processes(plan, todo, settings, source, searches, groups, workers, progress)
                    for k, cols in stream_:
                        workdir.save(k, plan.shard_digest(k), cols)
                        progress.shard_done(k, len(plan.shard_rows(k)))
            finally:
                if stream_ is not None:
                    stream_.close()        # its searches end before the network they use is closed
                progress.close()
            cols = columns.concatenate([workdir.load(k) for k in range(plan.num_shards)]) \
                if plan.num_shards else columns.empty(0, settings.mode, settings.top_k)
            pgn_sources = [s for s in plan.sources if _is_pgn(s, kind)]
            print(f"analyse: writing {', '.join(outputs)}", file=stream or sys.stderr, flush=True)
            written = writers.write_outputs(outputs, pgn_sources, plan, cols, settings.mode)
            errors = writers.all_errors(plan, cols)
            errors_file = errors_path(outputs[0])
            if errors:
                writers.write_errors(errors_file, errors)
            elif os.path.exists(errors_file):
                os.unlink(errors_file)
        except BaseException:
            workdir.close_after_failure()
            raise
        workdir.remove()
        return RunResult(len(plan.positions), len(plan.rows), len(errors), written,
                         time.monotonic() - started, sum(len(plan.shard_rows(k)) for k in todo), mux,
                         refused=int((cols["error"] != "").sum()))
    finally:
        close_when_done(preparing, lambda prepared: prepared[1].close())   # however the run ends, once loaded


class _Loaded:
    """A network loaded ahead for a run, or why it failed to load (raised
    only where the run needs it: a resumed run with nothing left to do does
    not)."""

    def __init__(self, network=None, error: Exception | None = None):
        self._network, self._error = network, error

    def network(self):
        if self._error is not None:
            raise self._error
        return self._network

    def close(self) -> None:
        if self._network is not None:
            self._network.close()
            self._network = None


def _prepare_workers(source: NetSource, workers, use_ray: bool, load: bool) -> tuple:
    """(workers, _Loaded): the count (AUTO resolved; None on Ray, where the
    cluster's GPUs decide) and, for a run in this process, its network."""
    if use_ray:
        return (None if workers == AUTO else workers), _Loaded()
    count = auto_workers(source.backend) if workers == AUTO else (workers or 1)
    if count > 1 or not load:
        return count, _Loaded()
    try:
        return count, _Loaded(source.load())
    except Exception as e:              # raised where the run needs its network
        return count, _Loaded(error=e)


def _is_pgn(path: str, kind: str | None) -> bool:
    from lc0_rocm.analysis.inputs import kind_of
    return (kind or kind_of(path)) == "pgn"
