"""What every backend provides: a batched forward pass over input planes."""
from __future__ import annotations

import abc
import dataclasses

import numpy as np

from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE, WDL_SIZE


class BackendError(Lc0RocmError):
    """A backend that cannot be created or cannot run."""


@dataclasses.dataclass(frozen=True)
class BackendAttributes:
    """What a backend tells the search about itself (lc0's BackendAttributes):
    the defaults of Threads 0 and MinibatchSize 0 come from here, so each
    backend states its own numbers in one place."""

    runs_on_cpu: bool                  # the forward pass computes on the host's cores
    suggested_num_search_threads: int  # search threads for Threads 0
    recommended_batch_size: int        # positions per batch for MinibatchSize 0
    maximum_batch_size: int            # the most positions one forward call takes in one pass


# What a backend that says nothing of itself gets: lc0's generic minibatch
# (Network::GetMiniBatchSize) and two search threads, one gathering while
# the other's batch is at the network.
DEFAULT_ATTRIBUTES = BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=2,
                                       recommended_batch_size=256, maximum_batch_size=1024)


@dataclasses.dataclass(frozen=True)
class NativeSlot:
    """A way for native code (the native search) to run the network with no
    Python in between: `address` is a C forward function (lc0core_forward_fn's
    signature) and `ctx` its argument, e.g. lc0rocm_forward and a GPU stream
    of the slot's own. A slot with `parts` is lc0's demux over them (the
    core's lc0core_demux_forward): each batch is cut into parts that run at
    once, at least `minimum_split` positions each."""

    address: int = 0
    ctx: int = 0
    max_batch: int = 0
    parts: tuple["NativeSlot", ...] = ()
    minimum_split: int = 0


def slot_leaves(slots) -> list[NativeSlot]:
    """The plain slots of `slots`, a demux slot's parts in its place."""
    out = []
    for slot in slots:
        out += slot_leaves(slot.parts) if slot.parts else [slot]
    return out


def c_slot(ffi, lib, slot: NativeSlot, keep: list) -> tuple:
    """(forward, ctx, max_batch) in the native core's C types (`ffi`, `lib`:
    native_core.load()) for a NativeSlot; a slot with parts becomes a
    core-side demux over them. What cffi allocates is appended to `keep`,
    which must outlive every call through the slot."""
    if not slot.parts:
        return (ffi.cast("lc0core_forward_fn", slot.address), ffi.cast("void*", slot.ctx),
                int(slot.max_batch))
    demux = ffi.new("lc0core_demux*")
    demux.count, demux.minimum_split = len(slot.parts), int(slot.minimum_split)
    for i, part in enumerate(slot.parts):
        demux.forward[i], demux.ctx[i], demux.max_batch[i] = c_slot(ffi, lib, part, keep)
    keep.append(demux)
    return ffi.addressof(lib, "lc0core_demux_forward"), demux, 0


def python_forward(ffi, forward_packed, on_error):
    """A native core forward function (`lc0core_forward_fn`) that calls the
    Python `forward_packed(masks, values) -> (policy, wdl, moves_left)`.
    An exception cannot cross into C: it goes to `on_error(e)` and the call
    returns 1, which fails the search. Keep the result alive while in use."""
    @ffi.callback("lc0core_forward_fn")
    def forward(_ctx, n, masks, values, policy, wdl, moves_left):
        try:
            m = np.frombuffer(ffi.buffer(masks, n * NUM_PLANES * 8), np.uint64).reshape(n, NUM_PLANES)
            v = np.frombuffer(ffi.buffer(values, n * NUM_PLANES * 4), np.float32).reshape(n, NUM_PLANES)
            p, w, ml = forward_packed(m, v)
            np.frombuffer(ffi.buffer(policy, n * POLICY_SIZE * 4), np.float32)[:] = \
                np.asarray(p, np.float32).reshape(-1)
            np.frombuffer(ffi.buffer(wdl, n * WDL_SIZE * 4), np.float32)[:] = np.asarray(w, np.float32).reshape(-1)
            np.frombuffer(ffi.buffer(moves_left, n * 4), np.float32)[:] = np.asarray(ml, np.float32).reshape(-1)
            return 0
        except BaseException as e:  # noqa: BLE001 - the caller re-raises it after the run
            on_error(e)
            return 1
    return forward


class Backend(abc.ABC):
    """One evaluator of one network.

    forward() takes planes (N, 112, 8, 8) float32 and returns
      policy logits (N, 1858) float32, raw (no softmax), lc0's policy order;
      wdl (N, 3) float32 probabilities (win, draw, loss) for the side to move;
      moves left (N,) float32 in plies (zeros when the net has no such head).
    """

    name: str = "?"

    @abc.abstractmethod
    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ...

    def forward_packed(self, masks: np.ndarray, values: np.ndarray):
        """Same as forward() for lc0's compact input: (N, 112) uint64 masks
        (bit i = square i) and (N, 112) float32 values. GPU backends
        override this to send 1 KB per position instead of 28 KB."""
        return self.forward(unpack_planes(masks, values))

    def host_empty(self, shape, dtype=np.float32) -> np.ndarray:
        """An uninitialised array that this backend moves fastest as a
        forward input or output: page-locked memory on GPU backends (one
        DMA, no staging copy), plain memory here."""
        return np.empty(shape, dtype)

    def forward_into(self, planes: np.ndarray, out: tuple) -> tuple:
        """forward() with the outputs written into `out` = (policy (N, 1858),
        wdl (N, 3), moves_left (N,)), C-contiguous float32 arrays, e.g.
        from host_empty() and reused from call to call; returns `out`."""
        out = checked_outputs(out, len(planes))
        return copy_outputs(self.forward(planes), out)

    def forward_packed_into(self, masks: np.ndarray, values: np.ndarray, out: tuple) -> tuple:
        """forward_packed() into `out`, as forward_into()."""
        out = checked_outputs(out, len(masks))
        return copy_outputs(self.forward_packed(masks, values), out)

    def attributes(self) -> BackendAttributes:
        """Threads, batch sizes and where it computes (see BackendAttributes)."""
        return DEFAULT_ATTRIBUTES

    def native_slots(self, count: int) -> list[NativeSlot] | None:
        """`count` slots whose forward calls may run at the same time (each
        with its own stream and buffers), kept by the caller until this
        backend closes; None when the backend has no native entry (then the
        native search calls forward_packed through a callback)."""
        return None

    def release_slots(self, slots) -> None:
        """Take back slots from native_slots whose caller is done with them
        (no call through them running or to come): a later native_slots
        reuses their streams and buffers instead of making new ones, so a
        program that makes search after search on one network does not
        grow the device's memory. Slots not this backend's are ignored."""

    def close(self) -> None:
        """Release what the backend holds (device memory, threads)."""


def checked_planes(planes) -> np.ndarray:
    """`planes` as contiguous float32 (N, 112, 8, 8); ValueError otherwise."""
    planes = np.ascontiguousarray(planes, dtype=np.float32)
    if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
        raise ValueError(f"planes must have shape (N, {NUM_PLANES}, 8, 8), got {planes.shape}")
    return planes


def checked_packed(masks, values) -> tuple[np.ndarray, np.ndarray]:
    """lc0's packed input as contiguous (N, 112) uint64 masks and float32
    values; ValueError otherwise."""
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    values = np.ascontiguousarray(values, dtype=np.float32)
    if masks.ndim != 2 or masks.shape[1] != NUM_PLANES or values.shape != masks.shape:
        raise ValueError(f"masks and values must both have shape (N, {NUM_PLANES}), "
                         f"got {masks.shape} and {values.shape}")
    return masks, values


def empty_outputs(n: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uninitialised (policy (n, 1858), wdl (n, 3), moves_left (n,)) float32 arrays."""
    return (np.empty((n, POLICY_SIZE), np.float32), np.empty((n, WDL_SIZE), np.float32),
            np.empty(n, np.float32))


def checked_outputs(out, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`out` as (policy (n, 1858), wdl (n, 3), moves_left (n,)), each a
    writeable C-contiguous float32 array; ValueError otherwise (outputs are
    written in place, so nothing is converted)."""
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise ValueError("out must be a tuple (policy, wdl, moves_left)")
    for name, a, shape in zip(("policy", "wdl", "moves_left"), out, ((n, POLICY_SIZE), (n, WDL_SIZE), (n,))):
        if not isinstance(a, np.ndarray) or a.dtype != np.float32 or a.shape != shape:
            raise ValueError(f"out {name} must be a float32 array of shape {shape}, got "
                             f"{getattr(a, 'dtype', type(a).__name__)} {getattr(a, 'shape', '')}")
        if not (a.flags.c_contiguous and a.flags.writeable):
            raise ValueError(f"out {name} must be C-contiguous and writeable")
    return tuple(out)


def copy_outputs(outputs, out) -> tuple:
    for dst, src in zip(out, outputs):
        np.copyto(dst, src)
    return out


def unpack_planes(masks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(N, 112) masks and values -> (N, 112, 8, 8) float32 planes."""
    masks = np.ascontiguousarray(masks, dtype="<u8")
    bits = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 8),
                         axis=-1, bitorder="little")
    planes = bits.reshape(*masks.shape, 8, 8).astype(np.float32)
    return planes * np.asarray(values, dtype=np.float32)[..., None, None]


def pack_planes(planes) -> tuple[np.ndarray, np.ndarray]:
    """(N, 112, 8, 8) planes -> lc0's packed (masks (N, 112) uint64, values
    (N, 112) float32). An all-zero plane packs as lc0's empty plane (mask 0,
    value 1), so a plane lc0 sends as mask all ones with value 0 (rule 50 at
    0) packs differently than lc0 packs it."""
    planes = checked_planes(planes)
    flat = planes.reshape(len(planes), NUM_PLANES, 64)
    nonzero = flat != 0
    masks = np.packbits(nonzero, axis=-1, bitorder="little").view("<u8").reshape(
        len(planes), NUM_PLANES).astype(np.uint64)
    first = np.argmax(nonzero, axis=-1)
    values = np.take_along_axis(flat, first[..., None], axis=-1)[..., 0]
    values = np.where(masks != 0, values, np.float32(1.0)).astype(np.float32)
    return masks, values


def wdl_from_classical(q: np.ndarray) -> np.ndarray:
    """Classical value head (q in [-1, 1]) as (w, d, l) with no draw mass."""
    q = np.asarray(q, dtype=np.float32)
    return np.stack([(1 + q) / 2, np.zeros_like(q), (1 - q) / 2], axis=-1)
