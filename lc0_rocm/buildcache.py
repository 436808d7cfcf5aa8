"""What the two native libraries (the GPU library in native/ and the chess
core in native/core/) share about building: the per-user cache folder, the
hash of the sources that names a build, the cffi declarations cut out of the
headers, and a lock so that processes building at once do not collide."""
from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import platform
import re

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
