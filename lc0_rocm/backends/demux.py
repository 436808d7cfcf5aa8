"""`demux`: lc0's wrapper that splits each batch over its children, in parallel.

    --backend=demux --backend-opts="backend=cuda-fp16,(gpu=0),(gpu=1)"

As lc0's network_demux.cc: a batch of N positions is cut into parts of
ceil(N / T) positions, T the total worker threads (each child's `threads`,
default 1), or of `minimum-split-size` when the parts would be smaller;
part j goes to child (start + j) mod children, `start` turning with each
call so that small batches also spread. Each child has its own thread pool
of `threads` workers (on a GPU, each worker uses its own stream), so parts
run concurrently and no lock is shared between children. The outputs are
the parts' outputs in order: each position's result is what its child
computes for it.

Packed inputs (the search's and backendbench's) go through the native
core's demux (the same C function the native search's demux slots call)
when every child has native slots: the parts run on native threads and
write straight into the caller's outputs, with no Python per part and no
copy to join them. Planes, children without native slots, a call made
while another is in flight, and a failing call (for its error naming the
child) take the Python path below.

Options: `backend` and `threads` per child, `minimum-split-size` at the top.
"""
from __future__ import annotations

import concurrent.futures
import itertools
import threading

from lc0_rocm.backends.base import (DEFAULT_ATTRIBUTES, BackendAttributes, BackendError, NativeSlot, c_slot,
                                    checked_outputs, checked_packed)
from lc0_rocm.backends.children import (WrapperBackend, child_slots, close_children, concat_outputs,
                                        create_children, empty_outputs, int_setting, plan_children,
                                        slice_inputs)

TAKES_CHILDREN = True
CHILD_KEYS = ("threads",)
ROOT_KEYS = ("minimum-split-size",)


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def create(name: str, weights, **options) -> "DemuxBackend":
    children, root = plan_children(name, options, CHILD_KEYS, ROOT_KEYS)
    threads = [int_setting(c, "threads", 1, 0) or 1 for c in children]
    text = root.get("minimum-split-size", 0)
    try:
        minimum_split = int(text)
    except ValueError:
        minimum_split = -1
    if minimum_split < 0:
        raise BackendError(f"{name}: minimum-split-size must be an integer >= 0, got {text!r}")
    create_children(children, weights)
    return DemuxBackend(children, threads, minimum_split)


def split_sizes(n: int, parts: int, minimum_split: int = 0) -> list[int]:
    """lc0's demux split of n positions over `parts` workers."""
    size = -(-n // parts)
    if size < minimum_split:
        size = min(n, minimum_split)
    return [min(size, n - start) for start in range(0, n, size)]


class DemuxBackend(WrapperBackend):
    kind = "demux"

    def __init__(self, children, threads: list[int], minimum_split: int = 0):
        super().__init__(children)
        self.threads = threads
        self.minimum_split = minimum_split
        self._pools = [concurrent.futures.ThreadPoolExecutor(t, thread_name_prefix=f"lc0-rocm-demux-{i}")
                       for i, t in enumerate(threads)]
        self._counter = itertools.count()
        self._native = None            # (ffi, lib, demux, keep) once built; False: none to be had
        self._native_lock = threading.Lock()

    def attributes(self) -> BackendAttributes:
        """Every batch spans all children: the search's two threads (one
        gathering while the other's batch is out), a batch that fills every
        GPU child (the sum of their recommended sizes, as lc0's demux
        suggests), at most the children's maxima together."""
        kids = self.child_attributes()
        gpus = [a for a in kids if not a.runs_on_cpu]
        return BackendAttributes(
            runs_on_cpu=not gpus, suggested_num_search_threads=DEFAULT_ATTRIBUTES.suggested_num_search_threads,
            recommended_batch_size=(sum(a.recommended_batch_size for a in gpus)
                                    or DEFAULT_ATTRIBUTES.recommended_batch_size),
            maximum_batch_size=sum(a.maximum_batch_size for a in kids))

    def forward_packed(self, masks, values):
        masks, values = checked_packed(masks, values)
        outputs = empty_outputs(len(masks))
        if self._native_forward(masks, values, outputs):
            return outputs
        return super().forward_packed(masks, values)

    def forward_packed_into(self, masks, values, out):
        masks, values = checked_packed(masks, values)
        out = checked_outputs(out, len(masks))
        if self._native_forward(masks, values, out):
            return out
        return super().forward_packed_into(masks, values, out)

    def _native_forward(self, masks, values, outputs) -> bool:
        """The batch through the native core's demux, written into `outputs`;
        False when that path is busy (another caller), missing or failed, so
        the caller takes the Python path."""
        n = len(masks)
        if not n or not self._native_lock.acquire(blocking=False):
            return False
        try:
            native = self._native_demux()
            if not native:
                return False
            ffi, lib, demux, _ = native
            ptr = lambda t, a: ffi.cast(t, ffi.from_buffer(a))   # noqa: E731
            status = lib.lc0core_demux_forward(demux, n, ptr("uint64_t*", masks), ptr("float*", values),
                                               *(ptr("float*", a) for a in outputs))
            return status == 0
        finally:
            self._native_lock.release()

    def _native_demux(self):
        """The native core's demux over one native slot per child worker, made
        on first use (the caller holds _native_lock); None when the core or a
        child's native slots are missing, or after close()."""
        if self._native is None:
            self._native = False
            from lc0_rocm import native_core
            if native_core.available()[0]:
                slots = self.native_slots(1)
                if slots:
                    ffi, lib = native_core.load()
                    keep: list = []
                    _, demux, _ = c_slot(ffi, lib, slots[0], keep)
                    self._native = (ffi, lib, demux, keep)
        return self._native or None

    def _dispatch(self, method, inputs, n):
        if all(c.backend is None for c in self.children):
            raise BackendError(f"{self.name}: the backend is closed")
        sizes = split_sizes(n, sum(self.threads), self.minimum_split)
        start = next(self._counter)
        futures, offset = [], 0
        for j, size in enumerate(sizes):
            i = (start + j) % len(self.children)
            part = slice_inputs(inputs, offset, offset + size)
            futures.append(self._pools[i].submit(self.call, self.children[i], method, part))
            offset += size
        concurrent.futures.wait(futures)   # every part done before any error is raised
        return concat_outputs([f.result() for f in futures])

    def native_slots(self, count):
        """`count` demux slots: each cuts a batch over every child's workers
        (`threads` per child, a stream each), as _dispatch does."""
        slots = []
        for _ in range(count):
            per_child = []
            for child, threads in zip(self.children, self.threads):
                got = child_slots(child, threads)
                if got is None:
                    return None
                per_child.append(got)
            # Interleaved (child 0, child 1, ..., child 0, ...): part j lands
            # on child (start + j) mod children, as in _dispatch.
            parts = [got[t] for t in range(max(self.threads)) for got in per_child if t < len(got)]
            if len(parts) > 16:
                return None               # the core's demux takes 16 parts at most
            slots.append(NativeSlot(parts=tuple(parts), minimum_split=self.minimum_split))
        return slots

    def close(self):
        # The native demux points at the children's streams: drop it first
        # (waiting for a call in flight), so later calls take the Python path
        # and its "backend is closed" error.
        with self._native_lock:
            self._native = False
        for pool in self._pools:
            pool.shutdown(wait=True)
        close_children(self.children)
