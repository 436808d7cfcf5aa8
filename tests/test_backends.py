"""Backend registry (lc0_rocm.backends) and the cpu backend's options."""
import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends.base import BackendError, unpack_planes
from lc0_rocm.weights import load_weights


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(BackendError, match="unknown backend 'nope'.*cpu"):
        backends.resolve("nope")
    ok, reason = backends.is_available("nope")
    assert not ok and "unknown backend" in reason


def test_every_registered_name_is_listed():
    assert set(backends.names()) == set(backends.REGISTRY) | {"auto"}
    assert {"cpu", "rocm", "rocm-fp16", "rocm-auto", "cuda", "cuda-fp16", "cuda-auto"} <= set(backends.names())


def test_auto_is_a_usable_backend():
    name = backends.resolve("auto")
    assert backends.is_available(name)[0], name


def test_cpu_options_reach_the_model(maia_path):
    w = load_weights(maia_path)
    backend = backends.create("cpu", w, algorithm="im2col", threads="1")
    assert backend.model.algorithm == "im2col"


def test_cpu_rejects_unknown_and_bad_options(maia_path):
    w = load_weights(maia_path)
    with pytest.raises(BackendError, match="unknown option.*colour.*known: threads, algorithm"):
        backends.create("cpu", w, colour="blue")
    with pytest.raises(BackendError, match="threads must be a positive integer"):
        backends.create("cpu", w, threads="many")


def test_unpack_planes_puts_bit_i_on_square_i():
    rng = np.random.default_rng(1)
    masks = rng.integers(0, 2**63, size=(3, 112), dtype=np.uint64)
    values = rng.random((3, 112), dtype=np.float32)
    planes = unpack_planes(masks, values)
    n, p, sq = 2, 57, 45
    bit = (int(masks[n, p]) >> sq) & 1
    assert planes[n, p, sq // 8, sq % 8] == np.float32(bit * values[n, p])
    assert planes.shape == (3, 112, 8, 8) and planes.dtype == np.float32
