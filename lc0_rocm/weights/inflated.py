"""Kept copies of big gzipped net files, so that loading one again skips
gzip and most of the protobuf parse.

Inflating is most of a big net's first load: a 184 MB t82 file takes ~1.5 s
to inflate on the H200 host (zlib decodes 16-bit weights at ~120 MB/s). So
the first load of a gzipped file of at least MIN_BYTES keeps a copy in
`<cache>/inflated/` (the net cache of netfiles.cache_dir), and later loads
of the same file read it. A copy holds the file's Net message with the
params of its big layers (MIN_PARAMS bytes or more) taken out, then those
params one after another: reading it back, the message parses in
milliseconds and the big layers' arrays view the one buffer the copy was
read into. A load so touches the net's bytes once instead of three times
(the read, protobuf's own copy, a bytes object per layer): each extra copy
of t82's ~190 MB cost its load ~0.1 s of page faults on the GPU host.

Layout: MAGIC, the CRC-32 of all that follows (4 bytes, little-endian),
the header's length (4 bytes), the header (JSON: the message's length, and
each taken layer's name, as decode names it, offset and length, offsets
from the end of the header), the message, the params (each on an ALIGN
boundary).

A copy is found by the file's real path, size, modification time and gzip
trailer (CRC-32 and length of the data), written only from data that
matches that trailer, and used only when its own CRC-32 matches: a
changed, replaced or damaged file or copy is inflated again. Only
single-member gzip files are kept (the trailer covers the last member
only). The folder holds the KEEP most recently used copies;
`LC0ROCM_INFLATED_NETS=N` keeps N instead, 0 none. Everything here is best
effort: a cache that cannot be read or written costs the inflation and
nothing else.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tempfile
import time
import zlib

import numpy as np

MIN_BYTES = 32 << 20          # smaller files inflate in a fraction of a second
KEEP = 4                      # BT4-sized nets inflate to a few hundred MB each
KEEP_ENV = "LC0ROCM_INFLATED_NETS"
SUFFIX = ".net"
OLD_SUFFIX = ".pb"            # whole inflated files, kept before the split copies: pruned
STALE_PART_S = 600            # a copy is written in about a second
MIN_PARAMS = 64 << 10         # a layer's params taken out of the message from this many bytes
MAGIC = b"LC0RNET1"
ALIGN = 64                    # each layer's params start on a cache line
READ_CHUNK = 16 << 20         # a copy is read and summed a chunk at a time


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


class Copy:
    """A kept copy read back: `message` (the Net with its big layers'
    params taken out) and `params` (each taken layer's name -> its params),
    views of the one buffer the copy was read into."""

    def __init__(self, message: memoryview, params: dict[str, memoryview]):
        self.message, self.params = message, params


class Entry:
    """Where a gzipped net file's kept copy lives (or would)."""

    def __init__(self, path: str, f, st: os.stat_result):
        self.trailer = _trailer(f, st.st_size)
        self.copy = folder() / (_key(path, st, self.trailer) + SUFFIX)

    def read(self, most: int) -> Copy | None:
        """The copy, checked, or None (no copy, one of more than `most`
        bytes, or one that does not check out)."""
        try:
            with open(self.copy, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size > most:
                    return None
                # numpy's memory: not zeroed first, and in huge pages where the
                # system allows them (numpy asks for them on big arrays), so
                # the copy's ~190 MB (t82) cost few page faults
                array = np.empty(size, np.uint8)
                crc = _read_summing(f, memoryview(array).cast("B"), len(MAGIC) + 4)
        except OSError:
            return None
        array.flags.writeable = False                  # the weights stay as immutable as bytes were
        copy = _unpacked(memoryview(array).cast("B"), crc) if crc is not None else None
        if copy is not None:
            self.touch()
        return copy

    def touch(self) -> None:
        try:
            os.utime(self.copy)                        # recently used: pruned last
        except OSError:
            pass

    def write(self, data: bytes, message: bytes, params: list[tuple[str, bytes]]) -> None:
        """Keeps `message` (the Net with the `params` of its big layers taken
        out) and those params when `data`, what the file inflated to, matches
        its trailer; then prunes the folder to keep() copies."""
        limit = keep()
        if limit == 0 or not _matches(data, self.trailer):
            return
        tmp = None
        try:
            self.copy.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".part-", dir=self.copy.parent)
            with os.fdopen(fd, "wb") as out:
                for part in _packed(message, params):
                    out.write(part)
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


def _packed(message: bytes, params: list[tuple[str, bytes]]) -> list:
    """A copy's parts, in order (the layout in the module's doc; the
    header's offsets count from the end of the header)."""
    parts, layers, at = [message], [], len(message)
    for name, raw in params:
        gap = _aligned(at) - at
        parts += [bytes(gap), raw]
        layers.append([name, at + gap, len(raw)])
        at += gap + len(raw)
    text = json.dumps({"message": len(message), "layers": layers}).encode()
    text = text.ljust(_aligned(len(MAGIC) + 8 + len(text)) - len(MAGIC) - 8)     # the body starts aligned
    body = [len(text).to_bytes(4, "little"), text, *parts]
    crc = 0
    for part in body:
        crc = zlib.crc32(part, crc)
    return [MAGIC, crc.to_bytes(4, "little"), *body]


def _read_summing(f, buffer: memoryview, start: int) -> int | None:
    """Fills `buffer` from `f`, returning the CRC-32 of buffer[start:], or
    None if the file ends early. Each chunk's CRC runs on a thread while the
    next chunk is read (both let go of the GIL): the check costs little
    more than the read (t82: 0.026 s each on the project's VM)."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lc0-rocm-crc") as pool:
        summed, at = None, 0
        while at < len(buffer):
            n = f.readinto(buffer[at:at + READ_CHUNK])
            if not n:
                return None
            first = max(at, start)
            previous = summed
            summed = pool.submit(lambda a, b, p: zlib.crc32(buffer[a:b], p.result() if p else 0),
                                 first, max(first, at + n), previous)
            at += n
        return summed.result() if summed is not None else 0


def _unpacked(buffer: memoryview, crc: int) -> Copy | None:
    """The Copy in `buffer` (whose CRC-32 past its stored one is `crc`), or
    None where its magic, CRC or header is wrong."""
    head = len(MAGIC) + 8
    if len(buffer) < head or bytes(buffer[:len(MAGIC)]) != MAGIC:
        return None
    if crc != int.from_bytes(buffer[len(MAGIC):len(MAGIC) + 4], "little"):
        return None
    length = int.from_bytes(buffer[len(MAGIC) + 4:head], "little")
    body = buffer[head + length:]
    try:
        header = json.loads(bytes(buffer[head:head + length]))
        message, layers = body[:header["message"]], header["layers"]
        params = {name: body[at:at + n] for name, at, n in layers}
        if len(message) != header["message"] or any(len(params[name]) != n for name, _, n in layers):
            return None
    except (ValueError, KeyError, TypeError):
        return None
    return Copy(message, params)


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def prune(limit: int) -> None:
    """Deletes all but the `limit` most recently used copies, and partial
    writes older than STALE_PART_S (a process killed while writing one)."""
    try:
        copies = sorted(folder().glob("*" + SUFFIX), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        stale = [p for p in folder().glob(".part-*") if time.time() - p.stat().st_mtime > STALE_PART_S]
        stale += list(folder().glob("*" + OLD_SUFFIX))
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
