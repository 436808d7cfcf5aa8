"""Building the GPU library's sources for the CPU under HIP-CPU
(github.com/ROCm/HIP-CPU, a checkout named by LC0ROCM_HIPCPU; it needs
TBB): the tests that run its kernels or its host code without a GPU."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def checkout() -> pathlib.Path:
    """HIP-CPU's checkout, or skip saying how to get one."""
    hip_cpu = os.environ.get("LC0ROCM_HIPCPU")
    if not hip_cpu or not (pathlib.Path(hip_cpu) / "include" / "hip" / "hip_runtime.h").is_file():
        pytest.skip("set LC0ROCM_HIPCPU to a checkout of github.com/ROCm/HIP-CPU to run this on the CPU")
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    return pathlib.Path(hip_cpu)


def copy_sources(tmp_path: pathlib.Path) -> pathlib.Path:
    """native/src and native/include copied under tmp_path (for a test to
    rewrite into HIP-CPU's dialect); the copy of native/src."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "native" / "src", src)
    shutil.copytree(ROOT / "native" / "include", tmp_path / "include")
    compat = src / "gpu_compat.h"  # HIP-CPU's device properties have no gcnArchName
    compat.write_text(compat.read_text().replace("prop.gcnArchName", '"gfx000"'))
    return src


def build_and_run(tmp_path: pathlib.Path, src: pathlib.Path, check: str) -> None:
    """tests/`check` built against the sources at `src` and run; it must exit 0."""
    exe = tmp_path / "check"
    build = subprocess.run(
        ["g++", "-std=c++17", "-O1", "-D__HIP_PLATFORM_AMD__", "-DLC0ROCM_KERNELS_ONLY",
         f"-I{checkout() / 'include'}", f"-I{src}", "-o", str(exe), str(ROOT / "tests" / check),
         "-ltbb", "-lpthread"],
        capture_output=True, text=True, timeout=600)
    if build.returncode != 0 and "-ltbb" in build.stderr:
        pytest.skip("TBB not found (HIP-CPU needs it: apt-get install libtbb-dev)")
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
