"""BLAS threads for the commands that search on the cpu backend (UCI, bench).

The cpu backend's matmuls run in numpy's OpenBLAS, which starts a spinning
worker thread per core. The search evaluates small batches (lc0's cpu
minibatch is 7); on a machine whose cores are busy those spinning threads
made each batch 10-100x slower here (maia-1900: ~3 nodes/s instead of
~300). One BLAS thread is the robust default; a user who sets
OPENBLAS_NUM_THREADS or OMP_NUM_THREADS keeps their choice.
"""
from __future__ import annotations

import os

USER_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "GOTO_NUM_THREADS")


def settle_blas_threads(backend: str) -> str | None:
    """Use one BLAS thread when `backend` (after `auto`) is cpu and the user
    did not choose; returns a one-line note of what was done, or None."""
    if any(os.environ.get(v) for v in USER_VARIABLES):
        return None
    from lc0_rocm import backends
    try:
        name = backends.resolve(backend)
    except Exception:  # an unknown name fails later, with a clear message
        return None
    if name != "cpu":
        return None
    from lc0_rocm.backends import blas_threads
    if blas_threads.set_threads(1):
        return "cpu backend: BLAS uses 1 thread (set OPENBLAS_NUM_THREADS to choose)"
    return None
