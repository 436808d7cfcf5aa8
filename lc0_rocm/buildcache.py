"""What the two native libraries (the GPU library in native/ and the chess
core in native/core/) share about building: the per-user cache folder, the
hash of the sources that names a build, the cffi declarations cut out of the
headers, a lock so that processes building at once do not collide, and the
build itself: commands run in parallel with progress reports and never
outlive the process, the objects a stopped build finished are kept for the
next, temporary folders a killed build leaves are removed by the next, and
a finished library is installed with a size and hash record that is
checked before a process first loads it (again if the file changes)."""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import mmap
import os
import pathlib
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from lc0_rocm.errors import Lc0RocmError

SOURCE_SUFFIXES = (".cpp", ".hip", ".h", ".hpp", ".inc")


def cache_root() -> pathlib.Path:
    """Folder of the native builds (GPU library and chess core):
    $LC0ROCM_BUILD_CACHE (formerly LC0ROCM_CACHE_DIR), else native/ in the
    package cache ($LC0ROCM_CACHE, else $XDG_CACHE_HOME/lc0-rocm, else
    ~/.cache/lc0-rocm)."""
    env = os.environ.get("LC0ROCM_BUILD_CACHE") or os.environ.get("LC0ROCM_CACHE_DIR")
    if env:
        return pathlib.Path(env)
    root = os.environ.get("LC0ROCM_CACHE") or os.environ.get("LC0_ROCM_CACHE")
    if root:
        return pathlib.Path(root).expanduser() / "native"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "lc0-rocm" / "native"


def find_sources(env_var: str, relative: tuple[str, ...], marker: str) -> tuple[pathlib.Path | None, list]:
    """The first of $env_var, <checkout>/native/<relative...> and the
    package's native_src/<relative...> that holds `marker` (a path inside
    it); None and the places looked at when none does."""
    env = os.environ.get(env_var)
    candidates = [pathlib.Path(env)] if env else []
    package = pathlib.Path(__file__).resolve().parent
    candidates += [package.parent.joinpath("native", *relative), package.joinpath("native_src", *relative)]
    found = next((c for c in candidates if (c / marker).is_file()), None)
    return found, candidates


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else what platform knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def source_hash(src: pathlib.Path, extra: str = "", skip_dirs: tuple[str, ...] = ()) -> str:
    """Hash of every source and header under `src` (path + content) and the
    build recipe `extra`; folders named in `skip_dirs` (relative to `src`)
    are left out."""
    h = hashlib.sha256(extra.encode())
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if rel.parts and rel.parts[0] in skip_dirs:
            continue
        if p.is_file() and p.suffix in SOURCE_SUFFIXES:
            h.update(str(rel).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cdef_block(text: str, marker: str) -> str | None:
    """The text between /* <marker>_BEGIN */ and /* <marker>_END */, or None."""
    m = re.search(rf"/\* {marker}_BEGIN \*/(.*)/\* {marker}_END \*/", text, re.S)
    return m.group(1) if m else None


@contextlib.contextmanager
def build_lock(path: pathlib.Path):
    """An exclusive lock on the file `path` (created) for the duration of a
    build; a no-op where fcntl does not exist."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ---------------------------------------------------------------- building
# A compiler driver (g++, hipcc, nvcc) starts helpers (cc1plus, as, clang)
# that outlive it when it is killed. Each command therefore runs under this
# small guard, in a process group of its own: when the guard's parent dies
# (a GUI killed the engine mid-build) the kernel sends it SIGTERM (Linux's
# parent-death signal) and it kills the whole group before it exits.
_GUARD = r"""
import ctypes, os, signal, subprocess, sys
os.setpgrp()
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    os.killpg(0, signal.SIGKILL)                                  # the parent is already gone
def end(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, end)
sys.exit(subprocess.call(sys.argv[2:]))
"""
PROGRESS_EVERY_S = 5.0
OWNER_FILE = "owner.pid"


def guarded(cmd: list[str]) -> list[str]:
    """`cmd` run under the guard above (POSIX); as is elsewhere."""
    if os.name != "posix":
        return cmd
    return [sys.executable, "-S", "-c", _GUARD, str(os.getpid()), *cmd]


@dataclasses.dataclass
class BuildProgress:
    """What a build reports: files done of total, seconds since it began."""
    what: str
    done: int
    total: int
    elapsed_s: float
    current: str = ""

    def line(self) -> str:
        tail = f" ({self.current})" if self.current else ""
        return f"{self.what}: file {self.done} of {self.total}, {self.elapsed_s:.0f} s{tail}"


def run_commands(commands: list[tuple[list[str], str]], what: str, *, env=None,
                 workers: int | None = None,
                 on_progress: Callable[[BuildProgress], None] | None = None,
                 every_s: float = PROGRESS_EVERY_S, already_done: int = 0,
                 on_finished: Callable[[int], None] | None = None) -> None:
    """Run (command, label) pairs, `workers` at a time, each under the guard.
    `on_progress` hears of each finished command and, while one runs, at
    least every `every_s` seconds, counting `already_done` files done before
    these (and hearing of those first); `on_finished` gets each succeeded
    command's index. A failing command raises BuildError with its output;
    any exception (Ctrl-C included) kills the commands still running, so a
    stopped build leaves no compiler behind."""
    workers = max(1, workers or os.cpu_count() or 1)
    start = time.monotonic()
    pending = list(enumerate(commands))
    running: list[tuple[subprocess.Popen, int, str, Any]] = []
    done, last_report = already_done, start

    def report(current: str = "") -> None:
        nonlocal last_report
        last_report = time.monotonic()
        if on_progress is not None:
            on_progress(BuildProgress(what, done, len(commands) + already_done, last_report - start, current))

    if already_done:
        report("kept from an interrupted build")
    try:
        while pending or running:
            while pending and len(running) < workers:
                index, (cmd, label) = pending.pop(0)
                out = tempfile.TemporaryFile()
                running.append((subprocess.Popen(guarded(cmd), stdin=subprocess.DEVNULL, stdout=out,
                                                 stderr=subprocess.STDOUT, env=env), index, label, out))
            time.sleep(0.02)
            for entry in list(running):
                proc, index, label, out = entry
                if proc.poll() is None:
                    continue
                running.remove(entry)
                if proc.returncode != 0:
                    out.seek(0)
                    text = out.read().decode(errors="replace")
                    out.close()
                    raise BuildError(f"{label} failed:\n{text[-4000:]}")
                out.close()
                if on_finished is not None:
                    on_finished(index)
                done += 1
                report(label)
            if running and time.monotonic() - last_report >= every_s:
                report(running[0][2])
    finally:
        for proc, _, _, out in running:
            _kill_group(proc)
            out.close()


# ---------------------------------------------------------------- objects kept across a killed build
# A GUI that gives up on a first start kills the engine mid-build (the GPU
# library takes minutes): each object a build finishes is kept in its
# library's folder (named by the sources' and recipe's hash, so an object
# there is always of these sources), and the next build compiles only what
# is missing. The objects go once the library is installed.
OBJECTS_FOLDER = ".objects"
PART_SUFFIX = ".part"


def compile_kept(sources: list[pathlib.Path], src: pathlib.Path,
                 command: Callable[[pathlib.Path, pathlib.Path], list[str]], library: pathlib.Path,
                 what: str, *, env=None, verbose: bool = False,
                 on_progress: Callable[[BuildProgress], None] | None = None) -> list[pathlib.Path]:
    """Compile `sources` (files under `src`; `command(source, output)`
    compiles one) into `library`'s objects folder, skipping objects an
    interrupted build left there whole; the object paths, in the sources'
    order. Each is compiled to a .part file, synced and renamed when its
    command succeeds, so a kill leaves no half object under a final name.
    `verbose` prints the commands run. Call under the build lock."""
    folder = library.parent / OBJECTS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for part in folder.glob("*" + PART_SUFFIX):       # a killed build's unfinished files
        part.unlink(missing_ok=True)
    names = [str(f.relative_to(src)) for f in sources]
    objects = [folder / (name.replace(os.sep, "_") + ".o") for name in names]
    todo = [i for i, obj in enumerate(objects) if not obj.is_file()]
    parts = [objects[i].with_name(objects[i].name + PART_SUFFIX) for i in todo]
    commands = [(command(sources[i], part), f"compiling {names[i]}") for i, part in zip(todo, parts)]
    if verbose:
        for command, _ in commands:
            print(" ".join(command), file=sys.stderr)

    def finished(index: int) -> None:
        part = parts[index]
        with open(part, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(part, objects[todo[index]])

    run_commands(commands, what, env=env, on_progress=on_progress, already_done=len(sources) - len(todo),
                 on_finished=finished)
    return objects


def discard_objects(library: pathlib.Path) -> None:
    """Remove the objects kept for `library` (installed, or to build anew)."""
    shutil.rmtree(library.parent / OBJECTS_FOLDER, ignore_errors=True)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # the guard made its own group (pgid = its pid)
    except (OSError, AttributeError):
        proc.kill()
    proc.wait()


class BuildError(Lc0RocmError, RuntimeError):
    """A compile or link command failed."""


# ---------------------------------------------------------------- temporary folders
@contextlib.contextmanager
def build_folder(parent: pathlib.Path, prefix: str):
    """A temporary folder for one build's objects, removed after it. It
    names its owner's pid, so a later build removes the folder of a build
    that was killed (`clean_stale`)."""
    parent.mkdir(parents=True, exist_ok=True)
    clean_stale(parent, prefix)
    path = pathlib.Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    try:
        (path / OWNER_FILE).write_text(str(os.getpid()))
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def clean_stale(parent: pathlib.Path, prefix: str) -> list[pathlib.Path]:
    """Remove `prefix`* folders whose owning process is gone."""
    removed = []
    for folder in parent.glob(prefix + "*"):
        try:
            pid = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            pid = None
        if pid is not None and _alive(pid):
            continue
        if pid is None and time.time() - _mtime(folder) < 3600:
            continue   # an old-style folder, maybe of a build still running: leave it an hour
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mtime(path: pathlib.Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


# ---------------------------------------------------------------- installing and checking
CHECK_SUFFIX = ".check"
NO_RECORD = "it has no size and hash record"


def install(built: pathlib.Path, target: pathlib.Path) -> None:
    """Move a finished library into the cache so that a power loss cannot
    leave half a file under the final name: the data is synced, a size and
    SHA-256 record is written (synced) beside it, then the library is
    renamed into place and the folder synced."""
    with open(built, "rb+") as f:
        os.fsync(f.fileno())
    target.parent.mkdir(parents=True, exist_ok=True)
    record = target.with_name(target.name + CHECK_SUFFIX)
    tmp_record = built.with_name(built.name + CHECK_SUFFIX)
    tmp_record.write_text(_fingerprint(built))
    with open(tmp_record, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp_record, record)
    os.replace(built, target)
    _sync_folder(target.parent)


# Libraries found whole in this process, by path, file identity and record:
# a command looks for its library several times (counting GPUs, preparing,
# creating), and hashing it again each time cost 0.03-0.16 s on an H100 host.
_VERIFIED: set[tuple] = set()


def verify(library: pathlib.Path) -> str | None:
    """None when `library` matches its size and SHA-256 record, else why not."""
    record = library.with_name(library.name + CHECK_SUFFIX)
    try:
        expected = record.read_text().strip()
    except OSError:
        return NO_RECORD
    try:
        stat = os.stat(library)
        seen = (str(library), stat.st_ino, stat.st_size, stat.st_mtime_ns, expected)
        if seen in _VERIFIED:
            return None
        actual = _fingerprint(library)
    except OSError as e:
        return f"it cannot be read ({e.strerror or e})"
    if actual != expected:
        return f"it does not match its record (size and SHA-256 {actual.split()[0]} bytes, expected {expected.split()[0]})"
    _VERIFIED.add(seen)
    return None


def adopt(library: pathlib.Path, probe_code: str) -> bool:
    """A library from before the records: load it in a child process
    (`probe_code`, Python), and when that works, write its record."""
    try:
        ok = subprocess.run([sys.executable, "-c", probe_code], stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if ok:
        record = library.with_name(library.name + CHECK_SUFFIX)
        tmp = record.with_name(record.name + f".{os.getpid()}")
        try:
            tmp.write_text(_fingerprint(library))
            os.replace(tmp, record)
        except OSError:
            pass
    return ok


def usable(library: pathlib.Path, what: str, abi_function: str, quiet: bool = False) -> bool:
    """True when the cached `library` is whole; a damaged one is removed
    (with a one-line notice naming `what`) so that it is rebuilt. A library
    built before records existed is adopted when it loads in a child process
    and answers `abi_function`."""
    if not library.is_file():
        return False
    problem = verify(library)
    if problem == NO_RECORD:
        probe = (f"import cffi; ffi = cffi.FFI(); ffi.cdef('int {abi_function}(void);'); "
                 f"ffi.dlopen({str(library)!r}).{abi_function}()")
        if adopt(library, probe):
            return True
        problem = "it has no record and does not load in a child process"
    if problem is None:
        return True
    if not quiet:
        print(f"lc0-rocm: the cached {what} {library} is damaged ({problem}); rebuilding it",
              file=sys.stderr, flush=True)
    discard(library)
    return False


def discard(library: pathlib.Path) -> None:
    """Remove a damaged library and its record, so that it is rebuilt."""
    for path in (library, library.with_name(library.name + CHECK_SUFFIX)):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _fingerprint(path: pathlib.Path) -> str:
    """'size sha256' of the file, hashed from a mapping of it in one call:
    hashlib lets go of the GIL for the whole file, where a loop over blocks
    took it back after each one, waiting behind other threads' imports."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return f"0 {hashlib.sha256().hexdigest()}"
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return f"{size} {hashlib.sha256(mapped).hexdigest()}"


def _sync_folder(folder: pathlib.Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
