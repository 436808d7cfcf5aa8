"""One worker: a network (one GPU, or the CPU) and what computes shards on
it. The same class runs in the analysing process, in a local worker process
(`process_main`) and in a Ray actor (analysis.ray_runner)."""
from __future__ import annotations

import concurrent.futures
import os
import queue
import threading

from lc0_rocm.analysis.settings import NetSource, Settings

# Shards a worker searches at once (in this process, a worker process or a
# Ray actor): with two, one process's searches ran out of jobs while a
# finished shard was read and saved (maia-1900, 100 nodes, H200: 15-20 % of
# the search threads' time waiting for a job); with one, at every shard.
SHARDS_IN_FLIGHT = 3


class ShardWorker:
    """compute(rows) -> the shard's columns (analysis.columns)."""

    def __init__(self, settings: Settings, network=None, source: NetSource | None = None,
                 extra_opts: str = "", searches: int | None = None, groups: int | None = None):
        if network is None:
            if source is None:
                raise ValueError("a worker needs a network or a NetSource")
            network = source.load(extra_opts)
            self._owns_network = True
        else:
            self._owns_network = False
        self.network = network
        self.settings = settings
        if settings.mode == "eval":
            from lc0_rocm.analysis.evaluate import RowEvaluator
            self.engine = RowEvaluator(network, top_k=settings.top_k)
        else:
            from lc0_rocm.analysis.many import searcher
            self.engine = searcher(network, settings.search_options(), searches=searches, groups=groups,
                                   batching=settings.batching, nodes=settings.nodes,
                                   movetime=settings.movetime)

    @staticmethod
    def import_engine(settings: Settings) -> None:
        """Imports the modules a worker of `settings` runs (the search's:
        ~0.07 s in a fresh process), so that a run can do it while its
        network loads rather than after."""
        if settings.mode == "eval":
            import lc0_rocm.analysis.evaluate  # noqa: F401
        else:
            import lc0_rocm.analysis.many  # noqa: F401

    def compute(self, rows: list[str], progress=None) -> dict:
        if self.settings.mode == "eval":
            out = self.engine.run(rows)
            if progress is not None:
                progress(len(rows))
            return out
        return self.engine.run(rows, nodes=self.settings.nodes, movetime=self.settings.movetime,
                               progress=progress)

    def stats(self) -> list[dict]:
        return self.engine.stats() if hasattr(self.engine, "stats") else []

    def cancel(self) -> None:
        """Ends computations going on in other threads (searches only)."""
        if hasattr(self.engine, "cancel"):
            self.engine.cancel()

    def close(self) -> None:
        if hasattr(self.engine, "close"):
            self.engine.close()
        if self._owns_network:
            self.network.close()


def process_main(index: int, settings: Settings, source: NetSource, extra_opts: str,
                 searches: int | None, groups: int | None, tasks, results, parent_pid: int) -> None:
    """A local worker process: shards from `tasks` ((shard, rows), None to
    end), ("done", shard, columns), ("progress", shard, k) or
    ("error", index, message) to `results`. Ends by itself when the
    analysing process is gone (SIGKILL leaves its children running)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle

    def watch_parent():
        while True:
            threading.Event().wait(1.0)
            if os.getppid() != parent_pid:
                os._exit(3)

    threading.Thread(target=watch_parent, daemon=True).start()
    try:
        worker = ShardWorker(settings, source=source, extra_opts=extra_opts, searches=searches, groups=groups)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which says it to the user
        results.put(("error", index, f"worker {index}: {type(e).__name__}: {e}"))
        return
    results.put(("ready", index, None))
    # Searches: SHARDS_IN_FLIGHT shards at once, the next queued behind the
    # one finishing; the network alone: one at a time.
    depth = SHARDS_IN_FLIGHT if settings.mode == "search" else 1
    running: dict = {}                     # future -> shard
    ended = failed = False
    with concurrent.futures.ThreadPoolExecutor(depth, thread_name_prefix="lc0-rocm-shard") as pool:
        while (running or not ended) and not failed:
            while not ended and len(running) < depth:
                try:
                    task = tasks.get(timeout=0.05 if running else 1.0)
                except queue.Empty:
                    break
                if task is None:
                    ended = True
                    break
                shard, rows = task
                running[pool.submit(worker.compute, rows,
                                    lambda k, s=shard: results.put(("progress", s, k)))] = shard
            if not running:
                continue
            done, _ = concurrent.futures.wait(running, timeout=0.05,
                                              return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                shard = running.pop(future)
                try:
                    out = future.result()
                except Exception as e:  # noqa: BLE001
                    results.put(("error", index, f"worker {index}, shard {shard}: {type(e).__name__}: {e}"))
                    failed = True
                    worker.cancel()                # the other shards end now
                    break
                results.put(("done", shard, out))
    worker.close()
