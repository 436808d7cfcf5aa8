"""Thread count of the BLAS library numpy uses (OpenBLAS), set at run time.

numpy's OpenBLAS starts one thread per core. That is fastest on an idle
machine, but when other processes hold the cores its spinning worker
threads can make a matmul 10-50x slower; one thread is then the robust
choice. numpy has no API for this, so this module calls OpenBLAS's own
setter through ctypes; where no OpenBLAS is loaded the calls report that
they could not act.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np  # noqa: F401  (loads numpy's BLAS library first)

# (setter, getter) symbol names: numpy's scipy-openblas builds, then plain OpenBLAS.
_SYMBOLS = [
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
]


def _loaded_libraries() -> list[str]:
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if ".so" in line and "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if "blas" in p.lower())


@functools.lru_cache(maxsize=1)
def _functions():
    """(set, get) ctypes functions of the loaded OpenBLAS, or None."""
    for path in _loaded_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


def get_threads() -> int | None:
    """Threads BLAS uses now, or None when it cannot be told."""
    fns = _functions()
    return None if fns is None else int(fns[1]())


def set_threads(n: int) -> bool:
    """Make BLAS use `n` threads (process-wide). False when it cannot be set."""
    if int(n) < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    fns = _functions()
    if fns is None:
        return False
    fns[0](int(n))
    return True
