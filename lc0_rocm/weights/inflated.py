"""Inflated copies of big gzipped net files, so that loading one again skips gzip.

Inflating is most of a big net's load: a 184 MB t82 file takes ~1.5 s to
inflate on the H200 host (zlib decodes 16-bit weights at ~120 MB/s) and
~0.1 s to read back inflated. So the first load of a gzipped file of at
least MIN_BYTES keeps its inflated bytes in `<cache>/inflated/` (the net
cache of netfiles.cache_dir), and later loads of the same file read them.

A copy is found by the file's real path, size, modification time and gzip
trailer (CRC-32 and length of the data), and used only when its own CRC-32
and length match that trailer: a changed, replaced or damaged file or copy
is inflated again. Only single-member gzip files are kept (the trailer
covers the last member only). The folder holds the KEEP most recently used
copies; `LC0ROCM_INFLATED_NETS=N` keeps N instead, 0 none. Everything here
is best effort: a cache that cannot be read or written costs the inflation
and nothing else.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile
import time
import zlib

MIN_BYTES = 32 << 20          # smaller files inflate in a fraction of a second
KEEP = 4                      # BT4-sized nets inflate to a few hundred MB each
KEEP_ENV = "LC0ROCM_INFLATED_NETS"
SUFFIX = ".pb"
STALE_PART_S = 600            # a copy is written in about a second


def folder() -> pathlib.Path:
    from lc0_rocm.netfiles import cache_dir        # here: only big nets need netfiles' imports
    return cache_dir() / "inflated"


def keep() -> int:
    try:
        return max(0, int(os.environ.get(KEEP_ENV, KEEP)))
    except ValueError:
        return KEEP


def _trailer(f, size: int) -> bytes:
    f.seek(size - 8)
    trailer = f.read(8)
    f.seek(0)
    return trailer


def _key(path: str, st: os.stat_result, trailer: bytes) -> str:
    text = f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode() + trailer
    return hashlib.sha256(text).hexdigest()[:32]


def _matches(data: bytes, trailer: bytes) -> bool:
    crc, length = int.from_bytes(trailer[:4], "little"), int.from_bytes(trailer[4:], "little")
    return len(data) % (1 << 32) == length and zlib.crc32(data) == crc


class Entry:
    """Where a gzipped net file's inflated copy lives (or would)."""

    def __init__(self, path: str, f, st: os.stat_result):
        self.trailer = _trailer(f, st.st_size)
        self.copy = folder() / (_key(path, st, self.trailer) + SUFFIX)

    def read(self, most: int) -> bytes | None:
        """The inflated bytes, or None (no copy, one of more than `most`
        bytes, or one that does not match)."""
        data = self.read_unchecked(most)
        if data is None or not self.matches(data):
            return None
        self.touch()
        return data

    def read_unchecked(self, most: int) -> bytes | None:
        """The copy's bytes before matches() has checked them, or None (no
        copy, or one of more than `most` bytes)."""
        try:
            if self.copy.stat().st_size > most:
                return None
            return self.copy.read_bytes()
        except OSError:
            return None

    def matches(self, data: bytes) -> bool:
        """Whether `data` is what the file inflates to, by its gzip trailer
        (a CRC-32 of the whole copy: zlib computes it without the GIL)."""
        return _matches(data, self.trailer)

    def touch(self) -> None:
        try:
            os.utime(self.copy)                        # recently used: pruned last
        except OSError:
            pass

    def write(self, data: bytes) -> None:
        """Keeps `data` (the file's single gzip member, inflated) when it
        matches the trailer, then prunes the folder to keep() copies."""
        limit = keep()
        if limit == 0 or not _matches(data, self.trailer):
            return
        tmp = None
        try:
            self.copy.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=self.copy.parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, self.copy)                 # whole or not at all
            tmp = None
            prune(limit)
        except OSError:
            pass
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


def prune(limit: int) -> None:
    """Deletes all but the `limit` most recently used copies, and partial
    writes older than STALE_PART_S (a process killed while writing one)."""
    try:
        copies = sorted(folder().glob("*" + SUFFIX), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        stale = [p for p in folder().glob(".part-*") if time.time() - p.stat().st_mtime > STALE_PART_S]
    except OSError:
        return
    for old in copies[limit:] + stale:
        try:
            old.unlink()
        except OSError:
            pass


def entry(path: str, f) -> Entry | None:
    """The cache entry for the open file `f` at `path` when it is a gzipped
    file worth keeping inflated and copies are kept at all, else None."""
    try:
        st = os.fstat(f.fileno())
        if st.st_size < max(MIN_BYTES, 18) or keep() == 0:
            return None
        magic = f.read(2)
        f.seek(0)                                      # the caller reads the file from its start
        return Entry(path, f, st) if magic == b"\x1f\x8b" else None
    except OSError:
        return None
