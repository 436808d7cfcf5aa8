"""The native NN cache's hash table against std::unordered_map, compiled
with the system C++ compiler (with AddressSanitizer where it links)."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORE = ROOT / "native" / "core"


def test_cache_table_agrees_with_unordered_map(tmp_path):
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "check"
    sources = [str(ROOT / "tests" / "native_cache_table_check.cpp"),
               str(CORE / "src" / "search" / "nn_cache_table.cpp")]
    base = [compiler, "-std=c++17", "-O1", f"-I{CORE / 'src'}", f"-I{CORE / 'include'}", "-o", str(exe)]
    build = subprocess.run(base + ["-fsanitize=address,undefined"] + sources, capture_output=True, text=True)
    if build.returncode != 0:                 # no sanitizer runtime: plain build
        build = subprocess.run(base + sources, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr[-3000:]
