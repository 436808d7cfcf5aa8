"""Thread count of the BLAS library numpy uses, set at run time through
threadpoolctl.

numpy's OpenBLAS starts one thread per core. That is fastest on an idle
machine, but when other processes hold the cores its spinning worker
threads make the small matmuls of a search 10-50x slower (public API,
maia-1900 at batch 16: ~800 positions/s idle, 23 with the cores busy).
One thread is the robust choice, so the cpu backend uses one
(`limit_by_default`) unless the user chose: `threads=N` as a backend option,
`set_threads(N)`, or one of the usual environment variables. The commands
that search (UCI, bench) settle it before loading a net
(`settle_for_backend`), so they can say what they did.
"""
from __future__ import annotations

import functools
import os

import numpy as np  # noqa: F401  (loads numpy's BLAS library before threadpoolctl looks)

# Variables through which a user sets BLAS/OpenMP threads before start-up.
USER_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                  "BLIS_NUM_THREADS", "GOTO_NUM_THREADS")
_user_chose = False


@functools.lru_cache(maxsize=1)
def _controller():
    """threadpoolctl's view of the loaded thread pools; None where the
    package is missing (a bare machine given only a few wheels): BLAS then
    keeps its own thread count and set_threads says it could not act."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _blas_libraries() -> list:
    controller = _controller()
    if controller is None:
        return []
    return list(controller.select(user_api="blas").lib_controllers)


def get_threads() -> int | None:
    """Threads BLAS uses now, or None when no BLAS library could be found."""
    libraries = _blas_libraries()
    return int(libraries[0].num_threads) if libraries else None


def set_threads(n: int) -> bool:
    """Make BLAS use `n` threads (process-wide). False when it cannot be set."""
    global _user_chose
    if int(n) < 1:
        raise ValueError(f"BLAS threads must be >= 1, got {n}")
    libraries = _blas_libraries()
    for library in libraries:
        library.set_num_threads(int(n))
    _user_chose = True
    return bool(libraries)


def settle_for_backend(backend: str) -> str | None:
    """One BLAS thread when `backend` (after `auto`) is cpu and the user did
    not choose; a one-line note of what was done, or None. The search
    evaluates small batches (lc0's cpu minibatch is 7): on busy cores the
    spinning BLAS threads made each batch 10-100x slower (maia-1900: ~3
    nodes/s instead of ~300)."""
    if any(os.environ.get(v) for v in USER_VARIABLES):
        return None
    from lc0_rocm import backends
    try:
        name = backends.resolve(backend)
    except Exception:  # an unknown name fails later, with a clear message
        return None
    if name == "cpu" and set_threads(1):
        return "cpu backend: BLAS uses 1 thread (set OPENBLAS_NUM_THREADS to choose)"
    return None


def limit_by_default() -> bool:
    """One BLAS thread unless the user chose (set_threads, or an environment
    variable such as OPENBLAS_NUM_THREADS). True when it set one thread."""
    if _user_chose or any(os.environ.get(v) for v in USER_VARIABLES):
        return False
    libraries = _blas_libraries()
    for library in libraries:
        library.set_num_threads(1)
    return bool(libraries)
