"""The native chess core (native/core): build it with the system C++
compiler into the per-user cache and load it with cffi.

    ffi, lib = native_core.load()        # builds on first use, then cached
    ok, reason = native_core.available() # False (and why) when it cannot be had

The library is compiled from every native/core/src/**/*.cpp (C++17, -O3,
-march=native where the compiler takes it) into
`<cache root>/core-<hash>/liblc0core.so`; the hash covers the sources, the
compiler, the flags and the CPU, so a cache shared between machines keeps
one build per machine. Builds take a file lock, report progress (file n of N, at least every
5 s) to a caller that asks, and install the finished library with a size
and hash record (synced, then renamed into place): a cached library that
does not match its record (cut short by a power loss, say) is rebuilt
after a one-line notice. Processes starting together build it once.
cffi's declarations are the LC0CORE_CDEF_BEGIN/END blocks of
native/core/include/*.h in name order.

No compiler: `available()` says so on stderr once and callers use the
Python rules (python-chess). Environment: CXX picks the compiler,
LC0ROCM_BUILD_CACHE the cache, LC0ROCM_CORE_SRC the sources,
LC0ROCM_NO_NATIVE_CORE=1 turns the core off.
"""
from __future__ import annotations

import os
import pathlib
import platform
import shlex
import shutil
import subprocess
import sys
import threading
from typing import Callable

from lc0_rocm import buildcache
from lc0_rocm.errors import Lc0RocmError

LIBRARY_NAME = "liblc0core.so"
BASE_FLAGS = ("-std=c++17", "-O3", "-fPIC", "-pthread", "-fvisibility=hidden",
              "-fvisibility-inlines-hidden")
MACHINE_FLAGS = ("-march=native",)   # used when the compiler accepts them
COMPILERS = ("c++", "g++", "clang++")


class NativeCoreError(Lc0RocmError, RuntimeError):
    """The native core cannot be built or loaded."""


class NoCompilerError(NativeCoreError):
    """No C++ compiler on this machine."""


# ---------------------------------------------------------------- sources
def source_dir() -> pathlib.Path:
    """native/core next to the package (a checkout), or the packaged copy
    (package data `native_src`, a copy of native/)."""
    found, looked = buildcache.find_sources("LC0ROCM_CORE_SRC", ("core",), "include/lc0core_base.h")
    if found is None:
        raise NativeCoreError("native core sources not found (looked in "
                              + ", ".join(str(c) for c in looked) + ")")
    return found


def source_files(src: pathlib.Path) -> list[pathlib.Path]:
    files = sorted((src / "src").rglob("*.cpp"))
    if not files:
        raise NativeCoreError(f"no .cpp files under {src / 'src'}")
    return files


def cdef_text(src: pathlib.Path | None = None) -> str:
    """The LC0CORE_CDEF blocks of include/*.h, concatenated in name order."""
    src = src or source_dir()
    blocks = []
    for header in sorted((src / "include").glob("*.h")):
        block = buildcache.cdef_block(header.read_text(), "LC0CORE_CDEF")
        if block is None:
            raise NativeCoreError(f"{header.name} has no LC0CORE_CDEF_BEGIN/END block")
        blocks.append(f"/* {header.name} */{block}")
    return "\n".join(blocks)


# ---------------------------------------------------------------- compiler
def find_compiler() -> list[str]:
    """The compiler command: $CXX (may carry arguments), else the first of
    c++, g++, clang++ on PATH; NoCompilerError when there is none."""
    env = os.environ.get("CXX", "").strip()
    if env:
        cmd = shlex.split(env)
        path = shutil.which(cmd[0])
        if path is None:
            raise NoCompilerError(f"CXX={env!r} is not an executable")
        return [path, *cmd[1:]]
    for name in COMPILERS:
        path = shutil.which(name)
        if path:
            return [path]
    raise NoCompilerError("no C++ compiler found (set CXX, or install g++ or clang++)")


def _accepts(compiler: list[str], flags: tuple[str, ...]) -> bool:
    try:
        r = subprocess.run([*compiler, *flags, "-x", "c++", "-fsyntax-only", "-"],
                           input="int x;\n", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def library_path(compiler: list[str], src: pathlib.Path) -> pathlib.Path:
    recipe = "|".join([*compiler, *BASE_FLAGS, *MACHINE_FLAGS, platform.machine(), buildcache.cpu_model()])
    return buildcache.cache_root() / f"core-{buildcache.source_hash(src, recipe)}" / LIBRARY_NAME


def build(force: bool = False, verbose: bool = False,
          on_progress: Callable[[buildcache.BuildProgress], None] | None = None) -> pathlib.Path:
    """Compile the core (or find it, whole, in the cache) and return its
    path. `on_progress` hears of each compiled file and at least every 5 s."""
    compiler = find_compiler()
    src = source_dir()
    lib = library_path(compiler, src)
    if not force and _usable(lib):
        return lib
    with buildcache.build_lock(lib.parent.with_name(lib.parent.name + ".lock")):
        if not force and _usable(lib, quiet=True):   # another process built it meanwhile
            return lib
        flags = list(BASE_FLAGS)
        if _accepts(compiler, MACHINE_FLAGS):
            flags += MACHINE_FLAGS
        if force:
            buildcache.discard_objects(lib)
        with buildcache.build_folder(lib.parent.parent, ".build-core-") as tmp:
            out = tmp / LIBRARY_NAME
            try:
                objs = buildcache.compile_kept(
                    source_files(src), src, lambda f, o: [*compiler, *flags, "-c", str(f), "-o", str(o)], lib,
                    "building the chess core", verbose=verbose, on_progress=on_progress)
                link = [*compiler, *flags, "-shared", "-o", str(out), *map(str, objs)]
                if verbose:
                    print(" ".join(link), file=sys.stderr)
                buildcache.run_commands([(link, "linking the native core")], "linking the chess core")
            except buildcache.BuildError as e:
                raise NativeCoreError(str(e)) from None
            buildcache.install(out, lib)
            buildcache.discard_objects(lib)
    return lib


def _usable(lib: pathlib.Path, quiet: bool = False) -> bool:
    return buildcache.usable(lib, "chess core", "lc0core_abi_version", quiet)


# ---------------------------------------------------------------- loading
_lock = threading.Lock()
_loaded: tuple | None = None
_failure: NativeCoreError | None = None
_said_no_compiler = False


def load() -> tuple:
    """(ffi, lib) of the core, built on first use; NativeCoreError (with the
    compiler's message on a build failure) when it cannot be had. Cached and
    thread-safe; a failure is remembered and raised again."""
    global _loaded, _failure
    loaded = _loaded          # once set, never changed but by reset(): no lock to read it
    if loaded is not None:
        return loaded
    with _lock:
        if _loaded is not None:
            return _loaded
        if _failure is not None:
            raise _failure
        if os.environ.get("LC0ROCM_NO_NATIVE_CORE", "") not in ("", "0"):
            _failure = NativeCoreError("the native core is turned off (LC0ROCM_NO_NATIVE_CORE)")
            raise _failure
        try:
            _loaded = _load(build())
        except NativeCoreError as e:
            _failure = e
            raise
        except OSError as e:
            _failure = NativeCoreError(f"building the native core: {e}")
            raise _failure from None
        return _loaded


def _load(path: pathlib.Path) -> tuple:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef_text())
    try:
        lib = ffi.dlopen(str(path))
    except OSError as e:
        raise NativeCoreError(f"cannot load the native core {path}: {e}") from None
    if lib.lc0core_abi_version() != lib.LC0CORE_ABI_VERSION:
        raise NativeCoreError(f"{path}: ABI version {lib.lc0core_abi_version()}, this package "
                              f"needs {lib.LC0CORE_ABI_VERSION}; delete it to rebuild")
    return ffi, lib


def available() -> tuple[bool, str]:
    """(True, "") when the core loads, else (False, why). The first time no
    compiler is found it says so in one line on stderr."""
    global _said_no_compiler
    try:
        load()
        return True, ""
    except NativeCoreError as e:
        if isinstance(e, NoCompilerError) and not _said_no_compiler:
            _said_no_compiler = True
            print(f"lc0-rocm: {e}; using the Python chess rules", file=sys.stderr)
        return False, str(e)


def reset() -> None:
    """Forget a loaded core or a remembered failure (tests)."""
    global _loaded, _failure, _said_no_compiler
    with _lock:
        _loaded, _failure, _said_no_compiler = None, None, False


def last_error() -> str:
    """The core's last error message on this thread ("" when none)."""
    ffi, lib = load()
    return ffi.string(lib.lc0core_last_error()).decode(errors="replace")


def check(status: int) -> None:
    """Raise NativeCoreError with the core's message when `status` is not OK."""
    if status != 0:
        raise NativeCoreError(last_error() or f"status {status}")
