"""The native core's build and loader (lc0_rocm/native_core.py): the cache,
the lock, no compiler, a build failure, the cffi declarations."""
from __future__ import annotations

import os
import pathlib
import shlex
import shutil
import subprocess
import sys

import pytest

from lc0_rocm import native_core
from lc0_rocm.backends import native_build

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORE = ROOT / "native" / "core"


@pytest.fixture
def tiny_core(tmp_path, monkeypatch):
    """A core of just the error handling (fast to build), a fresh cache and
    a fresh loader state."""
    src = tmp_path / "core"
    shutil.copytree(CORE / "include", src / "include")
    (src / "src").mkdir()
    for name in ("errors.h", "errors.cpp"):
        shutil.copy(CORE / "src" / name, src / "src" / name)
    monkeypatch.setenv("LC0ROCM_CORE_SRC", str(src))
    monkeypatch.setenv("LC0ROCM_BUILD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LC0ROCM_NO_NATIVE_CORE", raising=False)
    native_core.reset()
    yield src
    native_core.reset()


def test_cdef_is_every_header_block_in_name_order_and_parses():
    cffi = pytest.importorskip("cffi")
    text = native_core.cdef_text(CORE)
    names = [p.name for p in sorted((CORE / "include").glob("*.h"))]
    positions = [text.index(f"/* {n} */") for n in names]
    assert positions == sorted(positions) and names[0] == "lc0core_base.h"
    ffi = cffi.FFI()
    ffi.cdef(text)
    assert "lc0core_last_error" in text and "lc0core_forward_fn" in text


def test_builds_once_into_the_cache_and_loads(tiny_core, tmp_path):
    ffi, lib = native_core.load()
    assert lib.lc0core_abi_version() == lib.LC0CORE_ABI_VERSION
    assert ffi.string(lib.lc0core_last_error()) == b""
    path = native_core.build()
    assert path.is_relative_to(tmp_path / "cache") and path.parent.name.startswith("core-")
    mtime = path.stat().st_mtime_ns
    assert native_core.build() == path and path.stat().st_mtime_ns == mtime
    assert native_core.load() == (ffi, lib)
    assert native_core.available() == (True, "")
    # only the C ABI is exported
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True)
    if out.returncode == 0:
        exported = {ln.split()[-1] for ln in out.stdout.splitlines() if " T " in ln}
        assert exported == {"lc0core_abi_version", "lc0core_last_error"}


def test_a_source_change_builds_a_new_library(tiny_core):
    first = native_core.build()
    with open(tiny_core / "src" / "errors.cpp", "a") as f:
        f.write("\n// changed\n")
    assert native_core.build() != first


def test_processes_building_at_once_share_one_build(tiny_core):
    code = "from lc0_rocm import native_core; print(native_core.build())"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    paths = {out.strip() for out, _ in results}
    assert len(paths) == 1 and pathlib.Path(paths.pop()).is_file()
    leftovers = [p.name for p in (tiny_core.parent / "cache").iterdir() if p.name.startswith(".build")]
    assert leftovers == []


def test_a_build_stopped_at_its_link_is_finished_without_compiling_again(tiny_core, tmp_path, monkeypatch):
    """The objects a stopped build finished are kept (real compiler, real
    objects): the next build links them and the library loads."""
    real = native_core.find_compiler()
    log, stop = tmp_path / "cxx.log", tmp_path / "stop-the-link"
    wrapper = tmp_path / "cxx"
    wrapper.write_text(f"""#!/bin/sh
echo "$@" >> {log}
case " $* " in *" -shared "*) [ -e {stop} ] && {{ echo "link stopped" >&2; exit 1; }};; esac
exec {shlex.join(real)} "$@"
""")
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    stop.touch()
    with pytest.raises(native_core.NativeCoreError, match="link stopped"):
        native_core.build()
    stop.unlink()
    before = len(log.read_text().splitlines())
    path = native_core.build()
    assert not [ln for ln in log.read_text().splitlines()[before:] if " -c " in ln]
    assert not (path.parent / ".objects").exists()
    ffi, lib = native_core.load()
    assert lib.lc0core_abi_version() == lib.LC0CORE_ABI_VERSION


def test_no_compiler_says_so_once_and_is_not_available(tiny_core, tmp_path, monkeypatch, capsys):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CXX", raising=False)
    ok, reason = native_core.available()
    assert not ok and "no C++ compiler" in reason
    assert native_core.available() == (False, reason)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no C++ compiler" in err
    with pytest.raises(native_core.NoCompilerError):
        native_core.load()


def test_a_bad_cxx_is_named(tiny_core, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++ -O1")
    with pytest.raises(native_core.NoCompilerError, match="CXX='/nonexistent/c[+][+] -O1'"):
        native_core.load()


def test_a_build_failure_carries_the_compiler_message(tiny_core, capsys):
    (tiny_core / "src" / "broken.cpp").write_text("int f() { return undeclared_name; }\n")
    with pytest.raises(native_core.NativeCoreError,
                       match=r"(?s)compiling src/broken.cpp failed.*undeclared_name"):
        native_core.load()
    ok, reason = native_core.available()
    assert not ok and "undeclared_name" in reason
    assert capsys.readouterr().err == ""


def test_turned_off_by_the_environment(tiny_core, monkeypatch):
    monkeypatch.setenv("LC0ROCM_NO_NATIVE_CORE", "1")
    ok, reason = native_core.available()
    assert not ok and "LC0ROCM_NO_NATIVE_CORE" in reason


def test_the_gpu_library_hash_ignores_the_core(tmp_path):
    src = tmp_path / "native"
    shutil.copytree(native_build.source_dir(), src)
    before = native_build.source_hash(src, "recipe")
    (src / "core" / "src" / "extra.cpp").write_text("// core only\n")
    assert native_build.source_hash(src, "recipe") == before
