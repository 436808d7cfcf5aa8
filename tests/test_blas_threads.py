"""Setting numpy's OpenBLAS thread count at run time."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from lc0_rocm.backends import blas_threads


def test_set_and_get_threads_round_trip():
    before = blas_threads.get_threads()
    if before is None:
        pytest.skip("numpy's BLAS here is not OpenBLAS; its threads cannot be set")
    try:
        assert blas_threads.set_threads(1) and blas_threads.get_threads() == 1
        a = np.random.default_rng(0).random((300, 300), dtype=np.float32)
        np.testing.assert_allclose(a @ a.T, (a.astype(np.float64) @ a.T).astype(np.float32), rtol=1e-4)
    finally:
        blas_threads.set_threads(before)
    assert blas_threads.get_threads() == before


def test_bad_thread_count():
    with pytest.raises(ValueError, match=">= 1"):
        blas_threads.set_threads(0)


def test_public_api_uses_one_blas_thread_by_default(maia_path, tmp_path):
    """Issue 10.12: load_network(..., backend="cpu") itself sets one BLAS
    thread (not only the CLI); an explicit choice or OPENBLAS_NUM_THREADS wins."""
    import os
    import subprocess
    import sys
    script = ("import sys, lc0_rocm\n"
              "from threadpoolctl import threadpool_info\n"
              "opts = {'threads': int(sys.argv[2])} if len(sys.argv) > 2 else {}\n"
              "net = lc0_rocm.load_network(sys.argv[1], backend='cpu', **opts)\n"
              "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))\n")
    env = {k: v for k, v in os.environ.items() if k not in blas_threads.USER_VARIABLES}
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parent.parent)

    def blas(*args, **extra):
        out = subprocess.run([sys.executable, "-c", script, str(maia_path), *args],
                             capture_output=True, text=True, env={**env, **extra}, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    if blas(OPENBLAS_NUM_THREADS="2") == "[]":
        pytest.skip("threadpoolctl finds no BLAS library in numpy here")
    assert blas() == "[1]"
    assert blas("2") == "[2]"
    assert blas(OPENBLAS_NUM_THREADS="2") == "[2]"


def test_settle_for_backend_takes_one_thread_for_cpu(monkeypatch):
    """What UCI and bench do before loading a net: one BLAS thread for cpu
    unless the user chose, with a note saying so."""
    for var in blas_threads.USER_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    assert blas_threads.settle_for_backend("rocm") is None
    before = blas_threads.get_threads()
    note = blas_threads.settle_for_backend("cpu")
    if before is None:
        pytest.skip("no OpenBLAS loaded by numpy here")
    try:
        assert note and blas_threads.get_threads() == 1
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        assert blas_threads.settle_for_backend("cpu") is None
    finally:
        blas_threads.set_threads(before)
