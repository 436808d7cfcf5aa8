"""The GPU library's host conversion of weights to half
(native/src/tensor/half_bits.h) against numpy's float16 (IEEE binary16,
rounded to nearest even, as the GPU's __float2half rounds), compiled with
the system C++ compiler: every sign, exponent and top of the mantissa
with the low bits that decide the rounding, and random patterns."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def convert(tmp_path, values: np.ndarray) -> np.ndarray:
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "half_bits"
    build = subprocess.run([compiler, "-std=c++17", "-O2", "-fsanitize=undefined", f"-I{ROOT / 'native' / 'src'}",
                            "-o", str(exe), str(ROOT / "tests" / "native_half_bits_check.cpp")],
                           capture_output=True, text=True)
    if build.returncode != 0:          # no sanitizer runtime: plain build
        build = subprocess.run([compiler, "-std=c++17", "-O2", f"-I{ROOT / 'native' / 'src'}", "-o", str(exe),
                                str(ROOT / "tests" / "native_half_bits_check.cpp")], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    values.astype(np.float32).tofile(tmp_path / "in.bin")
    run = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return np.fromfile(tmp_path / "out.bin", dtype=np.uint16)


def test_half_bits_round_as_ieee_half(tmp_path):
    high = np.arange(1 << 16, dtype=np.uint32) << 16
    # The low bits that decide rounding: below, at and above a normal half's
    # tie (bit 12), a subnormal's, and ones set all through.
    low = np.array([0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001,
                    0xffff], dtype=np.uint32)
    rng = np.random.default_rng(70)
    patterns = np.concatenate([(high[:, None] | low[None, :]).ravel(),
                               rng.integers(0, 1 << 32, 2_000_000, dtype=np.uint64).astype(np.uint32)])
    values = patterns.view(np.float32)
    ours = convert(tmp_path, values)
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).view(np.uint16)
    nan = np.isnan(values)
    assert nan.any() and np.isnan(ours[nan].view(np.float16)).all()
    assert (ours[nan] & 0x8000 == expected[nan] & 0x8000).all()          # NaN keeps its sign
    wrong = np.flatnonzero(ours[~nan] != expected[~nan])
    assert wrong.size == 0, [(hex(int(patterns[~nan][i])), hex(int(ours[~nan][i])), hex(int(expected[~nan][i])))
                             for i in wrong[:5]]
    # Every kind of result was met: zeros, subnormals, normals, infinities.
    kinds = expected[~nan] & 0x7fff
    assert (kinds == 0).any() and ((kinds > 0) & (kinds < 0x400)).any() and (kinds == 0x7c00).any()
