"""lc0's `random` backend: made-up outputs hashed from the input planes.

The same input always gives the same outputs, so it tests and times
everything around the network (encoding, search, UCI) with no net file and
almost no compute; its numbers equal lc0's own random backend
(`--backend=random --backend-opts=seed=N,uniform=true`).

For each position: a 64-bit hash of the seed and the 112 planes' masks and
values; q and d from the hash; policy logit i from the hash with i
appended, uniform over [0, 3); moves left 0. `uniform=true`: q = d = 0 and
every logit 1. The native core computes it (lc0core_random_forward, also
callable by the native search); without a C++ compiler a numpy copy of the
same arithmetic gives the same numbers.

Options: seed (32-bit integer, default 0), uniform (true/false),
input_mode (lc0 input format to encode for; default the net's, or 1 without
a net), delay (milliseconds to sleep per forward call, like lc0's).
"""
from __future__ import annotations

import time

import numpy as np

from lc0_rocm.backends.base import Backend, BackendAttributes, BackendError, checked_packed, pack_planes
from lc0_rocm.sizes import NUM_PLANES, POLICY_SIZE

OPTIONS = ("seed", "uniform", "input_mode", "delay")
# Hashing is cheap: two search threads (one gathers while the other's batch
# is hashed) and lc0's generic minibatch.
ATTRIBUTES = BackendAttributes(runs_on_cpu=True, suggested_num_search_threads=2,
                               recommended_batch_size=256, maximum_batch_size=1024)


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def create(name: str, weights, **options) -> Backend:
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise BackendError(f"random backend: unknown option(s) {', '.join(unknown)}; "
                           f"known: {', '.join(OPTIONS)}")
    seed = _integer(options.get("seed", 0), "seed", -(1 << 31), (1 << 31) - 1)
    uniform = _boolean(options.get("uniform", False), "uniform")
    delay = _integer(options.get("delay", 0), "delay", 0, 3_600_000)
    if "input_mode" in options:
        from lc0_rocm import encoder
        input_format = _integer(options["input_mode"], "input_mode", 0, 1 << 16)
        if input_format not in encoder.INPUT_FORMATS:
            raise BackendError(f"random backend: input_mode {input_format} is not one of "
                               f"{', '.join(map(str, encoder.INPUT_FORMATS))}")
    elif weights is not None:
        input_format = int(weights.format.input)
    else:
        input_format = 1
    return RandomBackend(seed=seed, uniform=uniform, input_format=input_format, delay_ms=delay)


def _integer(value, name: str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BackendError(f"random backend: {name} must be an integer, got {value!r}") from None
    if isinstance(value, bool) or not low <= number <= high:
        raise BackendError(f"random backend: {name} must be an integer in [{low}, {high}], got {value!r}")
    return number


def _boolean(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise BackendError(f"random backend: {name} must be true or false, got {value!r}")


class RandomBackend(Backend):
    name = "random"
    has_moves_left = False   # like lc0's: no moves-left head

    def __init__(self, seed: int = 0, uniform: bool = False, input_format: int = 1,
                 delay_ms: int = 0, native: bool = True):
        self.seed, self.uniform, self.input_format = int(seed), bool(uniform), int(input_format)
        self.delay_ms = int(delay_ms)
        self._native = None
        if native:
            from lc0_rocm import native_core
            if native_core.available()[0]:
                ffi, lib = native_core.load()
                ctx = ffi.new("lc0core_random_net*")
                ctx.seed, ctx.uniform = self.seed, int(self.uniform)
                self._native = (ffi, lib, ctx)

    @property
    def is_native(self) -> bool:
        return self._native is not None

    def attributes(self) -> BackendAttributes:
        return ATTRIBUTES

    def forward(self, planes: np.ndarray):
        """Planes are packed back as lc0 holds them; an all-zero plane packs
        as lc0's empty plane (mask 0, value 1), so a plane that lc0 sends as
        mask all ones with value 0 (rule 50 at 0) hashes differently here
        than through forward_packed."""
        masks, values = pack_planes(planes)
        return self.forward_packed(masks, values)

    def forward_packed(self, masks: np.ndarray, values: np.ndarray):
        masks, values = checked_packed(masks, values)
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000.0)
        if self._native is None:
            return random_outputs(masks, values, self.seed, self.uniform)
        ffi, lib, ctx = self._native
        n = len(masks)
        policy = np.empty((n, POLICY_SIZE), dtype=np.float32)
        wdl = np.empty((n, 3), dtype=np.float32)
        moves_left = np.empty(n, dtype=np.float32)
        ptr = lambda t, a: ffi.cast(t, a.ctypes.data)   # noqa: E731
        status = lib.lc0core_random_forward(ctx, n, ptr("uint64_t*", masks), ptr("float*", values),
                                            ptr("float*", policy), ptr("float*", wdl),
                                            ptr("float*", moves_left))
        if status != 0:
            from lc0_rocm import native_core
            raise BackendError(f"random backend: {native_core.last_error() or f'status {status}'}")
        return policy, wdl, moves_left


# ---- the same arithmetic in numpy (no C++ compiler), uint64 wrapping ----
_U = np.uint64


def _scramble(v):
    return _U(0xfad0d7f2fbb059f1) * (v + _U(0xbaad41cdcb839961)) + \
        _U(0x7acec0050bf82f43) * ((v >> _U(31)) + _U(0xd571b3a92b1b2755))


def _append(h, x):
    return h ^ (_U(0x299799adf0d95def) + _scramble(x) + (h << _U(6)) + (h >> _U(2)))


def _pair(a, b):
    return _append(_append(np.zeros_like(a), a), b)


def input_hashes(masks: np.ndarray, values: np.ndarray, seed: int) -> np.ndarray:
    """(N,) uint64: the hash of each position's planes, starting from `seed`."""
    value_bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = np.full(len(masks), np.int64(seed).astype(np.uint64), dtype=np.uint64)
        for plane in range(NUM_PLANES):
            h = _pair(h, masks[:, plane])
            h = _pair(h, value_bits[:, plane])
    return h


def random_outputs(masks: np.ndarray, values: np.ndarray, seed: int, uniform: bool):
    """(policy (N, 1858), wdl (N, 3), moves_left (N,)) float32, as the core."""
    n = len(masks)
    if uniform:
        q = d = np.zeros(n, dtype=np.float32)
        policy = np.ones((n, POLICY_SIZE), dtype=np.float32)
    else:
        h = input_hashes(masks, values, seed)
        with np.errstate(over="ignore"):
            q = (((h % _U(200000)).astype(np.int64) - 100000) / 100000.0).astype(np.float32)
            max_d = np.float32(1.0) - np.abs(q)
            d_hash = _pair(h, np.full(n, 1234, dtype=np.uint64))
            d = ((max_d * (d_hash % _U(10000)).astype(np.float32)).astype(np.float64)
                 / 10000.0).astype(np.float32)
            prefix = _append(np.zeros(n, dtype=np.uint64), h)[:, None]
            logit_hash = _append(prefix, np.arange(POLICY_SIZE, dtype=np.uint64)[None, :])
        policy = (logit_hash % _U(10000)).astype(np.float32) * (np.float32(3.0) / np.float32(10000.0))
    wdl = np.stack([(np.float32(1.0) + q - d) / np.float32(2.0), d,
                    (np.float32(1.0) - q - d) / np.float32(2.0)], axis=-1).astype(np.float32)
    return policy.astype(np.float32), wdl, np.zeros(n, dtype=np.float32)
