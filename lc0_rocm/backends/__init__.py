"""Backend registry: names -> factories, with a priority for `auto`.

A backend module is imported only when its name is asked for, so a machine
without a GPU toolchain never touches the native library.
"""
from __future__ import annotations

import dataclasses
import importlib
import sys

from lc0_rocm.backends.base import Backend, BackendError


@dataclasses.dataclass(frozen=True)
class BackendEntry:
    name: str
    module: str          # module whose create(name, weights, **options) builds it
    priority: int        # higher wins for `auto` among available ones
    description: str


_ENTRIES = [
    BackendEntry("cpu", "lc0_rocm.backends.cpu", 0, "numpy reference (float32)"),
    BackendEntry("random", "lc0_rocm.backends.random", 0,
                 "lc0's random net: outputs hashed from the input (tests, timing; no net needed)"),
    BackendEntry("rocm", "lc0_rocm.backends.native", 0, "AMD GPU, HIP, float32"),
    BackendEntry("rocm-fp16", "lc0_rocm.backends.native", 0, "AMD GPU, HIP, float16"),
    BackendEntry("rocm-auto", "lc0_rocm.backends.native", 100, "AMD GPU, fp16 where fast"),
    BackendEntry("cuda", "lc0_rocm.backends.native", 0, "NVIDIA GPU, same source, float32"),
    BackendEntry("cuda-fp16", "lc0_rocm.backends.native", 0, "NVIDIA GPU, float16"),
    BackendEntry("cuda-auto", "lc0_rocm.backends.native", 90, "NVIDIA GPU, fp16 where fast"),
]
REGISTRY = {e.name: e for e in _ENTRIES}


def names() -> list[str]:
    return list(REGISTRY) + ["auto"]


def _module(entry: BackendEntry):
    return importlib.import_module(entry.module)


def is_available(name: str) -> tuple[bool, str]:
    """(usable here?, reason when not)."""
    entry = REGISTRY.get(name)
    if entry is None:
        return False, f"unknown backend {name!r}; known: {', '.join(names())}"
    try:
        return _module(entry).is_available(name)
    except ImportError as e:
        return False, f"{name}: {e}"


def resolve(name: str) -> str:
    """Turn `auto` into the best available backend name."""
    if name != "auto":
        if name not in REGISTRY:
            raise BackendError(f"unknown backend {name!r}; known: {', '.join(names())}")
        return name
    best = max(
        (e for e in _ENTRIES if e.priority > 0 and is_available(e.name)[0]),
        key=lambda e: e.priority, default=None,
    )
    if best is None:
        return "cpu"
    return best.name


def create(name: str, weights, **options) -> Backend:
    """Build backend `name` (or `auto`) for loaded `weights` (None: no net,
    only for backends that need none, such as `random`)."""
    requested = name
    name = resolve(name)
    if requested == "auto" and name == "cpu":
        reasons = [is_available(e.name)[1] for e in _ENTRIES if e.priority > 0]
        reason = next((r for r in reasons if r), "no GPU backend available")
        print(f"lc0-rocm: no GPU backend ({reason}); using cpu", file=sys.stderr)
    return _module(REGISTRY[name]).create(name, weights, **options)
