"""`multiplexing`: lc0's wrapper that merges batches from several calling
threads into larger ones, run by per-child worker threads.

    --backend=multiplexing --backend-opts="backend=cuda-fp16,(gpu=0),(gpu=1)"

As lc0's network_mux.cc: callers queue their batch and wait; each child has
`threads` workers (default 1), each of which takes the queued batches in
order while they fit in the child's `max_batch` (default 256; a single
larger batch is still taken alone), runs them as one forward pass on its
child and hands each caller its rows. Only the queue is locked, never a
forward pass. Batches of planes and of packed input are not merged with
each other.

Options: `backend`, `threads` and `max_batch` per child.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import threading

import numpy as np

from lc0_rocm.backends.base import BackendError
from lc0_rocm.backends.children import (WrapperBackend, close_children, create_children,
                                        int_setting, plan_children)

TAKES_CHILDREN = True
CHILD_KEYS = ("threads", "max_batch")
DEFAULT_MAX_BATCH = 256


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def create(name: str, weights, **options) -> "MultiplexingBackend":
    children, _ = plan_children(name, options, CHILD_KEYS)
    threads = [int_setting(c, "threads", 1, 0) or 1 for c in children]
    max_batch = [int_setting(c, "max_batch", DEFAULT_MAX_BATCH, 1) for c in children]
    create_children(children, weights)
    return MultiplexingBackend(children, threads, max_batch)


@dataclasses.dataclass
class Request:
    method: str
    inputs: tuple
    n: int
    future: concurrent.futures.Future = dataclasses.field(default_factory=concurrent.futures.Future)


class MultiplexingBackend(WrapperBackend):
    kind = "multiplexing"

    def __init__(self, children, threads: list[int], max_batch: list[int]):
        super().__init__(children)
        self.threads, self.max_batch = threads, max_batch
        self._queue: collections.deque[Request] = collections.deque()
        self._ready = threading.Condition()
        self._closed = False
        self._workers = [threading.Thread(target=self._work, args=(child, limit), daemon=True,
                                          name=f"lc0-rocm-mux-{i}")
                         for i, (child, t, limit) in enumerate(zip(children, threads, max_batch))
                         for _ in range(t)]
        for worker in self._workers:
            worker.start()

    def _dispatch(self, method, inputs, n):
        request = Request(method, inputs, n)
        with self._ready:
            if self._closed:
                raise BackendError(f"{self.name}: the backend is closed")
            self._queue.append(request)
            self._ready.notify()
        return request.future.result()

    def _take(self, limit: int) -> list[Request] | None:
        """The next merged batch (None once closed): queued requests of one
        kind, in order, while they fit in `limit`."""
        with self._ready:
            while not self._queue and not self._closed:
                self._ready.wait()
            if self._closed:
                return None
            taken = [self._queue.popleft()]
            total = taken[0].n
            while (self._queue and self._queue[0].method == taken[0].method
                   and total + self._queue[0].n <= limit):
                total += self._queue[0].n
                taken.append(self._queue.popleft())
            return taken

    def _work(self, child, limit: int) -> None:
        while (taken := self._take(limit)) is not None:
            count = len(taken[0].inputs)
            inputs = tuple(np.concatenate([r.inputs[i] for r in taken]) if len(taken) > 1
                           else taken[0].inputs[i] for i in range(count))
            try:
                outputs = self.call(child, taken[0].method, inputs)
            except BaseException as e:  # noqa: BLE001 - handed to every waiting caller
                for r in taken:
                    r.future.set_exception(e)
                continue
            offset = 0
            for r in taken:
                r.future.set_result(tuple(o[offset:offset + r.n] for o in outputs))
                offset += r.n

    def close(self):
        with self._ready:
            self._closed = True
            pending = list(self._queue)
            self._queue.clear()
            self._ready.notify_all()
        for r in pending:
            r.future.set_exception(BackendError(f"{self.name}: closed while the batch was queued"))
        for worker in self._workers:
            worker.join()
        close_children(self.children)
