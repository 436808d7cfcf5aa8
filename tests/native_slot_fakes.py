"""Native slots for tests without a GPU: cffi callbacks that run the native
core's random net where a GPU backend's slots would run its GPU forward.
Subclasses record what they test in `_forward` and call `run_random`."""
from __future__ import annotations

from lc0_rocm import native_core
from lc0_rocm.backends.base import NativeSlot


class CoreRandomSlots:
    def __init__(self, seed: int, uniform: int | None = None):
        self.ffi, self.lib = native_core.load()
        self.random = self.ffi.new("lc0core_random_net*")
        self.random.seed = seed
        if uniform is not None:
            self.random.uniform = uniform
        self.callbacks = []              # kept alive while the slots may be called

    def run_random(self, n, masks, values, policy, wdl, moves_left) -> int:
        return self.lib.lc0core_random_forward(self.random, n, masks, values, policy, wdl, moves_left)

    def _forward(self, ctx, n, masks, values, policy, wdl, moves_left) -> int:
        raise NotImplementedError

    def native_slots(self, count: int) -> list[NativeSlot]:
        """`count` slots, each its own callback; a slot's context is its number (1, 2, ...)."""
        slots = []
        for _ in range(count):
            callback = self.ffi.callback("lc0core_forward_fn", self._forward)
            self.callbacks.append(callback)
            slots.append(NativeSlot(int(self.ffi.cast("uintptr_t", callback)), len(self.callbacks), 0))
        return slots
