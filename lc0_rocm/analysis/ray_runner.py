"""Shards on a Ray cluster: one actor per GPU (or per node for the CPU
backends), each holding its network and searching SHARDS_IN_FLIGHT shards
at once. The net file travels through Ray's object store, so hosts need no
copy of it.
An actor that is lost (its node gone) gives its shards back to the
others; the run fails only when none is left, and then resumes like any
killed run. Ray is optional: `pip install 'lc0-rocm[ray]'`."""
from __future__ import annotations

import os
import tempfile
from typing import Iterator

from lc0_rocm.analysis.settings import AnalysisError, NetSource, Settings, WorkerError
from lc0_rocm.analysis.worker import SHARDS_IN_FLIGHT



class RayUnavailable(AnalysisError):
    """Ray is missing, or the cluster lacks what the run needs."""


def _ray():
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--ray needs Ray: pip install 'lc0-rocm[ray]' (or pip install ray)") from None
    return ray


class _Actor:
    """The actor's body (wrapped by ray.remote in `compute`)."""

    def __init__(self, settings: Settings, source: NetSource, weights_blob, searches, groups):
        from lc0_rocm.analysis.worker import ShardWorker
        self._file = None
        if weights_blob is not None:
            suffix = ".pb.gz" if source.weights and source.weights.endswith(".gz") else ".pb"
            handle = tempfile.NamedTemporaryFile(prefix="lc0-rocm-net-", suffix=suffix, delete=False)
            with handle:
                handle.write(weights_blob)
            self._file = handle.name
            source = NetSource(self._file, source.backend, source.backend_opts)
        self.worker = ShardWorker(settings, source=source, searches=searches, groups=groups)

    def compute(self, k: int, rows: list[str]):
        return k, self.worker.compute(rows)

    def node(self) -> str:
        import ray
        return ray.get_runtime_context().get_node_id()

    def close(self) -> None:
        self.worker.close()
        if self._file:
            os.unlink(self._file)


def _actor_count(ray, backend: str, workers: int | None) -> tuple[int, dict]:
    """How many actors and each one's resources."""
    gpu = backend.startswith(("rocm", "cuda")) or (backend == "auto" and ray.cluster_resources().get("GPU", 0) > 0)
    if gpu:
        count = workers or int(ray.cluster_resources().get("GPU", 0))
        if count < 1:
            raise RayUnavailable("the Ray cluster has no GPU for a GPU backend")
        return count, {"num_gpus": 1}
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    return workers or max(1, len(nodes)), {"num_cpus": 1}


def compute(plan, todo: list[int], settings: Settings, source: NetSource, address: str | None,
            workers: int | None, searches: int | None, groups: int | None, progress) -> Iterator[tuple[int, dict]]:
    ray = _ray()
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        started_here = True
    actors: list = []
    try:
        count, resources = _actor_count(ray, source.backend, workers)
        blob = None
        if source.weights:
            with open(source.weights, "rb") as f:
                blob = ray.put(f.read())
        remote = ray.remote(_Actor)
        concurrency = SHARDS_IN_FLIGHT if settings.mode == "search" else 1
        actors = [remote.options(max_concurrency=concurrency, scheduling_strategy="SPREAD", **resources)
                  .remote(settings, source, blob, searches, groups) for _ in range(count)]
        nodes = set(ray.get([a.node.remote() for a in actors]))
        print(f"analyse: {len(actors)} Ray actor(s) on {len(nodes)} node(s)", file=progress.stream, flush=True)
        queue = list(todo)
        running: dict = {}                 # ref -> (actor, shard)
        load = {id(a): 0 for a in actors}

        def feed():
            for actor in list(actors):
                while queue and load[id(actor)] < SHARDS_IN_FLIGHT:
                    k = queue.pop(0)
                    running[actor.compute.remote(k, plan.shard_rows(k))] = (actor, k)
                    load[id(actor)] += 1

        feed()
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            ref = ready[0]
            actor, k = running.pop(ref)
            load[id(actor)] -= 1
            try:
                shard, cols = ray.get(ref)
            except ray.exceptions.RayActorError:
                # Its node is gone: its shards go to the others.
                if actor in actors:
                    actors.remove(actor)
                queue.insert(0, k)
                for other_ref, (other, other_k) in list(running.items()):
                    if other is actor:
                        running.pop(other_ref)
                        queue.insert(0, other_k)
                if not actors:
                    raise WorkerError("every Ray worker was lost; run the same command again to resume") from None
                feed()
                continue
            yield shard, cols
            feed()
    finally:
        for actor in actors:
            try:
                ray.get(actor.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001 - the actor may be gone
                pass
            ray.kill(actor)
        if started_here:
            ray.shutdown()
