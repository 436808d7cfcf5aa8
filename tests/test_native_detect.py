"""GPU toolchain detection as a user meets it (issue 10.5): every toolchain
is tried, hipcc builds for AMD even where nvcc is installed, "no GPU found"
says what each probe answered, and `auto` gives every backend's reason."""
from __future__ import annotations

import pathlib
import subprocess
import sys
import textwrap

import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native, native_build

ROOT = pathlib.Path(__file__).resolve().parent.parent


def tool(folder: pathlib.Path, name: str, script: str) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)
    return path


def fake_cuda(tmp_path, monkeypatch, bin_dir):
    cuda = tmp_path / "cuda"
    (cuda / "include").mkdir(parents=True)
    (cuda / "include" / "cublas_v2.h").write_text("")
    (cuda / "lib64").mkdir()
    (cuda / "lib64" / "libcublas.so").write_text("")
    (cuda / "lib64" / "libcublasLt.so").write_text("")
    tool(bin_dir, "nvcc", "exit 0\n")
    monkeypatch.setattr(native_build, "_cuda_roots", lambda nvcc: [cuda])


def test_no_gpu_found_names_each_probe_without_inventing_answers(bare_env):
    tool(bare_env, "rocm_agent_enumerator", "echo gfx000\n")       # present, lists no GPU
    with pytest.raises(native.NativeError) as info:
        native.detect_target()
    message = str(info.value)
    assert message.startswith("no GPU found")
    assert "rocm_agent_enumerator lists none" in message
    assert "nvidia-smi not found" in message and "nvidia-smi lists none" not in message
    assert native_build.build_main([]) == 1


def test_build_native_suggests_arch_when_no_gpu(bare_env, capsys):
    assert native_build.build_main([]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no GPU found" in err and "--arch" in err


def test_every_toolchain_is_tried(bare_env, tmp_path, monkeypatch):
    """hipcc without hipBLAS no longer stops the search: nvcc + cuBLAS with an
    NVIDIA GPU is found behind it."""
    tool(bare_env, "hipcc", "exit 0\n")
    if pathlib.Path("/usr/include/hipblas/hipblas.h").is_file():
        pytest.skip("this machine has hipBLAS in /usr/include")
    fake_cuda(tmp_path, monkeypatch, bare_env)
    tool(bare_env, "nvidia-smi", "echo 9.0\n")
    tool(bare_env, "rocm_agent_enumerator", "echo gfx90a\n")       # an AMD GPU, but no hipBLAS
    tc, arch = native.detect_target()
    assert (tc.vendor, arch) == ("nvidia", "sm_90")
    tc = native_build.detect_toolchain()                              # toolchain only: the complete one
    assert tc.vendor == "nvidia"


def test_arch_picks_the_vendor(bare_env, tmp_path, monkeypatch):
    fake_cuda(tmp_path, monkeypatch, bare_env)
    tc, arch = native.detect_target(arch="sm_80")
    assert (tc.vendor, arch) == ("nvidia", "sm_80")
    with pytest.raises(native.NativeError, match="no GPU toolchain for AMD"):
        native.detect_target(arch="gfx1030")


def test_hipcc_builds_for_amd_even_with_nvcc_installed(bare_env, tmp_path, monkeypatch, capsys):
    """HIP_PLATFORM=amd reaches every hipcc run (Debian's hipcc otherwise
    hands the build to nvcc when one is installed)."""
    rocm = tmp_path / "rocm"
    (rocm / "include" / "hipblas").mkdir(parents=True)
    (rocm / "include" / "hipblas" / "hipblas.h").write_text("")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    log = tmp_path / "platform.log"
    tool(bare_env, "hipcc", f"""
        echo "$HIP_PLATFORM" >> {log}
        out=""; prev=""
        for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
        echo fake > "$out"
        """)
    tool(bare_env, "nvcc", "exit 1\n")
    lib = native.build("amd", arch="gfx90a")
    assert lib.is_file()
    platforms = log.read_text().split()
    assert platforms and set(platforms) == {"amd"}
    # The first build is not silent: a line per step on stderr (no terminal here).
    steps = capsys.readouterr().err.splitlines()
    assert steps[0].startswith("building the native library for gfx90a (once): compiling ")
    assert steps[-1].endswith(": linking")


def test_auto_reports_every_backends_reason(bare_env, capsys):
    note = backends.auto_fallback_note()
    assert note.startswith("no GPU found, using cpu")
    assert "rocm-auto: no AMD GPU found" in note and "cuda-auto: no NVIDIA GPU found" in note


def test_auto_note_through_the_cli(tmp_path, maia_path):
    """What a user sees from `backendbench -b auto` on a machine without a GPU:
    one line that says why cpu is used."""
    env = {"PATH": str(tmp_path), "PYTHONPATH": str(ROOT), "ROCM_PATH": str(tmp_path / "none"),
           "HOME": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "lc0_rocm", "backendbench", "-w", str(maia_path),
                           "--batches", "1", "--seconds", "0.01", "--positions", "2"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "using cpu" in ln]
    assert len(lines) == 1 and "no GPU found" in lines[0] and "Traceback" not in proc.stderr
