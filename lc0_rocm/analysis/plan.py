"""The work of a run: the input read into positions, the distinct ones
(rows) cut into shards, and the folder that keeps finished shards so a
killed run picks up where it stopped.

A `Plan` lists every position read (an *occurrence*: where it came from)
and, once each, the distinct rows to compute, in the order they first
occur; shard k holds rows [k * shard_size, (k + 1) * shard_size). It does
not depend on how many workers there are, so neither do the results.

`WorkDir` (`<output>.parts/`) holds `manifest.json` (the settings, the net,
the plan's digest: a run with other ones is refused, not mixed in) and one
`shard-NNNNNN.npz` per finished shard, written to a temporary name and
renamed once complete, so a file there is always whole. A lock file keeps
two runs off one folder.
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import tempfile

import numpy as np

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.inputs import InputError, Position, Selection
from lc0_rocm.analysis.occurrences import Occurrences
from lc0_rocm.analysis.pgn_parallel import read_items
from lc0_rocm.analysis.settings import AnalysisError

# 2: searches without prefetching, their minibatch fitted to the nodes (a
# version 1 folder's shards were searched otherwise: not mixed in).
MANIFEST_VERSION = 2


def default_shard_size(mode: str) -> int:
    """Rows per shard: 32768 for the network alone; 2048 searching, so
    that a shard's spread order (sizing.spread_order) can keep a game's
    successive positions ~2 x searches apart for up to 512 searches at
    once (a big net on a GPU runs 256), while a killed run loses little."""
    return 32768 if mode == "eval" else 2048


class WorkDirError(AnalysisError):
    """The parts folder cannot be used (another run holds it, or it holds a
    run with other settings); the message says what to do."""


@dataclasses.dataclass
class Plan:
    sources: list[str] = dataclasses.field(default_factory=list)
    positions: Occurrences = dataclasses.field(default_factory=Occurrences)   # with their rows
    errors: list[InputError] = dataclasses.field(default_factory=list)
    shard_size: int = 1024
    digest: str = ""

    @property
    def rows(self) -> list[str]:
        """The distinct rows, in the order they first occur."""
        return self.positions.rows

    @property
    def tasks(self):
        """Position i's row index."""
        return self.positions.tasks

    @property
    def num_shards(self) -> int:
        return (len(self.rows) + self.shard_size - 1) // self.shard_size

    def shard_rows(self, k: int) -> list[str]:
        return self.rows[k * self.shard_size:(k + 1) * self.shard_size]

    def shard_digest(self, k: int) -> str:
        return _digest(self.shard_rows(k))


def build_plan(paths: list[str], kind: str | None, selection: Selection, shard_size: int) -> Plan:
    if shard_size < 1:
        raise ValueError(f"shard size must be >= 1, got {shard_size}")
    plan = Plan(sources=[os.fspath(p) for p in paths], shard_size=shard_size)
    _add_positions(plan, read_items(plan.sources, kind, selection))
    return plan


def plan_from_positions(positions, shard_size: int) -> Plan:
    """A plan over positions given in memory (the Python API's boards and
    FENs), or read_items' items."""
    plan = Plan(shard_size=shard_size)
    _add_positions(plan, positions)
    return plan


def _add_positions(plan: Plan, items) -> None:
    """Each position into the plan (a row met before shares its task; a
    part of a file read apart, whole), the input errors apart, and the
    digest of the distinct rows in order."""
    positions = plan.positions
    for item in items:
        if isinstance(item, Position):
            positions.append(item)
        elif isinstance(item, InputError):
            plan.errors.append(item)
        else:                                   # a part: its positions and errors
            positions.extend(item.positions, item.source, item.line_offset, item.game_offset)
            plan.errors.extend(error for _, error in item.errors)
    positions.finish()
    plan.digest = _digest(plan.rows)


def _digest(rows: list[str]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update(row.encode())
        digest.update(b"\n")
    return digest.hexdigest()


class WorkDir:
    """`<output>.parts/`: the manifest and the finished shards."""

    def __init__(self, path: str | os.PathLike):
        self.path = pathlib.Path(path)
        self._lock = None

    def open(self, manifest: dict) -> None:
        """Creates or reopens the folder for this manifest; WorkDirError when
        another run holds it or its manifest differs."""
        if self.path.exists() and not self.path.is_dir():
            raise WorkDirError(f"cannot keep this run's finished parts in {self.path}: a file of that name "
                               f"is in the way")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            lock = open(self.path / "lock", "a")
        except OSError as e:
            raise WorkDirError(f"cannot keep this run's finished parts in {self.path}: "
                               f"{e.strerror or e}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            lock.close()
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise WorkDirError(f"{self.path} is in use by another analysis run") from None
            raise
        self._lock = lock
        manifest = dict(manifest, manifest_version=MANIFEST_VERSION)
        target = self.path / "manifest.json"
        if target.exists():
            try:
                old = json.loads(target.read_text())
            except (OSError, ValueError):
                old = None
            if old != manifest:
                self.close()
                differ = sorted(k for k in set(manifest) | set(old or {})
                                if (old or {}).get(k) != manifest.get(k))
                raise WorkDirError(
                    f"{self.path} holds an unfinished run with other "
                    f"{', '.join(differ) if old else 'settings (unreadable manifest)'}; "
                    f"run that command again to finish it, or delete {self.path} to start over")
            return
        self._write_atomic(target, json.dumps(manifest, indent=1, sort_keys=True).encode())

    def shard_path(self, k: int) -> pathlib.Path:
        return self.path / f"shard-{k:06d}.npz"

    def done(self, plan: Plan) -> set[int]:
        """Shards whose files are there and hold the plan's rows."""
        finished = set()
        for k in range(plan.num_shards):
            p = self.shard_path(k)
            if p.exists() and self._readable(p, plan.shard_digest(k)):
                finished.add(k)
        return finished

    @staticmethod
    def _readable(path: pathlib.Path, digest: str) -> bool:
        try:
            with np.load(path, allow_pickle=False) as f:
                return str(f["rows_sha256"]) == digest
        except (OSError, ValueError, KeyError):
            return False

    def save(self, k: int, digest: str, cols: dict) -> None:
        with tempfile.NamedTemporaryFile(dir=self.path, prefix=f".shard-{k:06d}-", suffix=".npz",
                                         delete=False) as f:
            np.savez(f, rows_sha256=np.array(digest), **cols)
            f.flush()
            os.fsync(f.fileno())
            name = f.name
        os.replace(name, self.shard_path(k))

    def load(self, k: int) -> dict:
        with np.load(self.shard_path(k), allow_pickle=False) as f:
            return {name: f[name] for name in columns.NAMES}

    def _write_atomic(self, target: pathlib.Path, data: bytes) -> None:
        with tempfile.NamedTemporaryFile(dir=self.path, prefix=".tmp-", delete=False) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            name = f.name
        os.replace(name, target)

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def remove(self) -> None:
        """The run is complete and its outputs written: the parts go."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def close_after_failure(self) -> None:
        """The run failed: its finished shards stay for the same command to
        resume; a folder with none (a net that would not load, say) holds
        nothing to resume, so it goes rather than refuse the next run's
        other settings."""
        if any(self.path.glob("shard-*.npz")):
            self.close()
        else:
            self.remove()
