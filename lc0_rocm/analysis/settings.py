"""What an analysis run computes (`Settings`) and on which net (`NetSource`):
everything that changes the results, which the manifest records so that a
resumed run cannot mix results of different settings."""
from __future__ import annotations

import dataclasses
import hashlib
import mmap
import os

from lc0_rocm import __version__
from lc0_rocm.errors import InvalidArgumentError, Lc0RocmError
from lc0_rocm.limits import check_nodes, check_seconds

MODES = ("eval", "search")


# Searches at once in one worker: the native core's search_many holds at
# most this many (native/core/src/search_many.cpp, kMaxSearches).
MAX_SEARCHES = 4096


class AnalysisError(Lc0RocmError):
    """A run that cannot go on for a reason the user can act on (the
    message says it): the command prints it, no traceback."""


class WorkerError(AnalysisError):
    """A worker failed or died; the finished shards are kept."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """mode "eval" (the network once per position: WDL, Q, moves left, the
    policy's `top_k` moves) or "search" (`nodes` visits and/or `movetime`
    seconds per position, with `options`: search knobs by lc0's names).
    `batching`: how concurrent searches share network calls (see
    analysis.many). `every` / `played`: which positions of a PGN game."""
    mode: str
    nodes: int | None = None
    movetime: float | None = None
    top_k: int = 3
    options: tuple[tuple[str, object], ...] = ()
    batching: str = "auto"
    every: int = 1
    played: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise InvalidArgumentError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == "search" and self.nodes is None and self.movetime is None:
            raise InvalidArgumentError("a search needs nodes or movetime")
        check_nodes(self.nodes)
        check_seconds(self.movetime, "movetime")
        if not 1 <= self.top_k <= 256:
            raise InvalidArgumentError(f"top_k must be 1..256, got {self.top_k}")
        if self.every < 1:
            raise InvalidArgumentError(f"every must be >= 1, got {self.every}")

    def search_options(self) -> dict:
        """The knobs, with smart pruning off at a fixed node count unless
        set: its stop depends on the clock, and analysis's searches must
        not (results equal whatever the load and the number of workers)."""
        options = dict(self.options)
        if self.movetime is None and not any(k.lower() == "smartpruningfactor" for k in options):
            options["SmartPruningFactor"] = 0
        return options

    def identity(self) -> dict:
        """What the manifest compares (JSON-ready)."""
        out = dataclasses.asdict(self)
        out["options"] = sorted([str(k), str(v)] for k, v in self.options)
        return out


@dataclasses.dataclass(frozen=True)
class NetSource:
    """How a worker gets its network: a file (or None for the random
    backend) on `backend` with lc0's backend options."""
    weights: str | None
    backend: str = "auto"
    backend_opts: str = ""

    def load(self, extra_opts: str = ""):
        from lc0_rocm.network import load_network
        opts = ",".join(o for o in (self.backend_opts, extra_opts) if o)
        return load_network(self.weights, backend=self.backend, backend_opts=opts or None)

    def identity(self) -> dict:
        return {"weights_sha256": file_sha256(self.weights) if self.weights else None,
                "backend": self.backend, "backend_opts": self.backend_opts, "version": __version__}


def file_sha256(path: str) -> str:
    """The file's SHA-256, hashed from a mapping of it in one call: hashlib
    lets go of the GIL for the whole file, where a loop over blocks took it
    back after each one and waited for it behind the thread loading the net
    beside it (t82 on this project's 2-core VM: 0.39-0.49 s beside the load
    in blocks, 0.18-0.24 s in one call; 0.12 s alone)."""
    with open(path, "rb") as f:
        try:
            mapped = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_POPULATE", 0),
                               prot=mmap.PROT_READ)
        except (OSError, ValueError):            # an empty file or one that cannot be mapped
            return hashlib.file_digest(f, "sha256").hexdigest()
    with mapped:
        return hashlib.sha256(mapped).hexdigest()


def resolved_weights(weights: str | None, backend: str) -> str | None:
    """The net file a name stands for (lc0's discovery), None for the random
    backend without a net."""
    if weights is None and backend == "random":
        return None
    from lc0_rocm import netfiles
    return os.fspath(netfiles.resolve_weights(weights))
