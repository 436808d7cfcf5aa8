"""`sim`: a simulated GPU, to study and test the search without one.

Its outputs are lc0's random network's (the `random` backend's numbers for
the same seed), but each forward call is delivered as a GPU would deliver
it: the device runs one pass at a time, in arrival order whichever search
thread sends it, and a pass of n positions takes pass_us + position_us * n
microseconds. Callers sleep meanwhile, so the host's cores are free as with
a real GPU. The native search reaches it through native slots (no Python
per batch), like a GPU backend; it logs its passes like one
(`pass_log_start()`, `pass_log()`).

Options: seed, uniform (as `random`), pass_us, position_us, or preset: a
line fitted to a net's `backendbench --packed` curve on a lent H200
(issue 70's table of 2026-12-02): t82 (default), bt4, maia-1900.
"""
from __future__ import annotations

import numpy as np

from lc0_rocm.backends.passes import PassLog
from lc0_rocm.backends.base import POLICY_SIZE, Backend, BackendError, NativeSlot, checked_packed, pack_planes

OPTIONS = ("seed", "uniform", "pass_us", "position_us", "preset")

# (pass_us, position_us): t = a + b n through the H200's b1..b512 figures.
PRESETS = {
    "t82": (600.0, 18.5),        # b1 0.66 ms, b64 1.89, b256 5.22, b512 10.0
    "bt4": (750.0, 32.0),        # b1 0.77 ms, b64 2.64, b256 8.62, b512 16.9
    "maia-1900": (70.0, 0.62),   # b1 0.079 ms, b64 0.143, b256 0.238, b512 0.39
}


def is_available(name: str) -> tuple[bool, str]:
    from lc0_rocm import native_core
    return native_core.available()


def _number(options, key, default, low, high) -> float:
    raw = options.get(key, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise BackendError(f"sim backend: {key} must be a number, got {raw!r}") from None
    if not low <= value <= high:
        raise BackendError(f"sim backend: {key} must be in [{low}, {high}], got {raw!r}")
    return value


def create(name: str, weights, **options) -> Backend:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise BackendError(f"sim backend: unknown option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
    preset = str(options.get("preset", "t82"))
    if preset not in PRESETS:
        raise BackendError(f"sim backend: preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    pass_us, position_us = PRESETS[preset]
    pass_us = _number(options, "pass_us", pass_us, 0, 1e6)
    position_us = _number(options, "position_us", position_us, 0, 1e5)
    seed = int(_number(options, "seed", 0, -(1 << 31), (1 << 31) - 1))
    uniform = str(options.get("uniform", "false")).lower() in ("1", "true", "yes", "on")
    input_format = int(weights.format.input) if weights is not None else 1
    return SimBackend(seed, uniform, pass_us, position_us, input_format)


class SimBackend(Backend):
    name = "sim"
    has_moves_left = False
    # A lent H200's multiprocessors: the search's minibatch follows it as on the GPU.
    device_info = {"multiprocessors": 132, "name": "simulated GPU"}

    def __init__(self, seed: int, uniform: bool, pass_us: float, position_us: float, input_format: int):
        from lc0_rocm import native_core
        self.ffi, self.lib = native_core.load()
        out = self.ffi.new("lc0core_sim_device**")
        if self.lib.lc0core_sim_create(seed, int(uniform), pass_us, position_us, out) != 0:
            raise BackendError(f"sim backend: {native_core.last_error()}")
        self._device = out[0]
        self.seed, self.uniform, self.input_format = seed, uniform, input_format
        self.pass_us, self.position_us = pass_us, position_us

    def forward(self, planes):
        return self.forward_packed(*pack_planes(planes))

    def forward_packed(self, masks, values):
        masks, values = checked_packed(masks, values)
        self._require_open()
        n = len(masks)
        policy = np.empty((n, POLICY_SIZE), np.float32)
        wdl = np.empty((n, 3), np.float32)
        moves_left = np.empty(n, np.float32)
        ffi = self.ffi
        ptr = lambda t, a: ffi.cast(t, a.ctypes.data)   # noqa: E731
        status = self.lib.lc0core_sim_forward(self._device, n, ptr("uint64_t*", masks), ptr("float*", values),
                                              ptr("float*", policy), ptr("float*", wdl), ptr("float*", moves_left))
        if status != 0:
            raise BackendError(f"sim backend: forward failed (status {status})")
        return policy, wdl, moves_left

    def native_slots(self, count: int):
        self._require_open()
        address = int(self.ffi.cast("uintptr_t", self.ffi.addressof(self.lib, "lc0core_sim_forward")))
        ctx = int(self.ffi.cast("uintptr_t", self._device))
        return [NativeSlot(address=address, ctx=ctx) for _ in range(count)]

    def pass_log_start(self) -> None:
        """Clear the device's pass log and restart its clock."""
        self._require_open()
        self.lib.lc0core_sim_log_start(self._device)

    def pass_log(self) -> PassLog:
        """The passes since creation or pass_log_start()."""
        self._require_open()
        count = self.ffi.new("int*")
        self.lib.lc0core_sim_log_read(self._device, self.ffi.NULL, 0, count)
        records = self.ffi.new("lc0core_sim_pass[]", max(1, count[0]))
        self.lib.lc0core_sim_log_read(self._device, records, count[0], count)
        return PassLog.from_records(records, min(count[0], len(records)))

    def _require_open(self):
        if self._device is None:
            raise BackendError("sim backend: closed")

    def close(self) -> None:
        if getattr(self, "_device", None) is not None:
            self.lib.lc0core_sim_destroy(self._device)
            self._device = None

