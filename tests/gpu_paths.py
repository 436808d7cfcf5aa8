"""Helpers of the GPU parity tests (test_native_gpu*.py): backend option
lists, the GPU backend to test or a skip with its reason, random positions
in packed form, and one backend configuration checked against the cpu
backend at several batch sizes."""
from __future__ import annotations

import re

import numpy as np
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native


def paths(opts: dict, key: str) -> set[str]:
    """The path names of opts' disable= or force= (a/b/c)."""
    return {n for n in opts.get(key, "").split("/") if n}


def with_disabled(opts: dict, *names: str) -> dict:
    """opts with names added to its disable= list."""
    return {**opts, "disable": "/".join(sorted(paths(opts, "disable") | set(names)))}


def gpu_backend_or_skip(precision: str) -> str:
    for prefix in ("rocm", "cuda"):
        name = prefix + ("" if precision == "fp32" else "-" + precision)
        ok, reason = native.is_available(name)
        if ok:
            return name
    pytest.skip(f"no GPU backend usable here ({native.is_available('rocm')[1]}; "
                f"{native.is_available('cuda')[1]})")


def random_packed(weights, count, seed=3):
    from lc0_rocm import encoder
    from lc0_rocm.backendbench import bench_positions
    boards = bench_positions(count, seed)
    masks, values, _ = encoder.encode_batch_packed(boards, weights.format.input or 1)
    return masks, values


def check_paths_match_cpu(w, name, opts, count, tol, expect_path=None):
    """GPU backend `name` created with backend options `opts` against the
    cpu backend, at batch 1, 2, 17 and `count`; the small sizes three times
    each: a plain pass, a captured graph's first launch and its replay.
    expect_path(device_info, batch): a pattern the backend's describe() must
    match at that (graph-padded) batch, or None."""
    masks, values = random_packed(w, count)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    gpu = backends.create(name, w, max_batch=count, **opts)
    for n in (1, 2, 17, count):
        described = gpu.describe(n)
        padded = int(re.search(r"\(batch (\d+)\)", described).group(1))
        wanted = expect_path(gpu.device_info, padded) if expect_path else None
        assert wanted is None or re.search(wanted, described), (n, described, wanted)
    for n in (1, 1, 1, 2, 2, 2, 17, 17, 17, count):
        got = gpu.forward_packed(masks[:n], values[:n])
        for g, r in zip(got, ref):
            assert not np.isnan(g).any()
            assert np.linalg.norm(g - r[:n]) <= tol * max(np.linalg.norm(r[:n]), 1e-6)
    gpu.close()
