"""Setting numpy's OpenBLAS thread count at run time."""
from __future__ import annotations

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
