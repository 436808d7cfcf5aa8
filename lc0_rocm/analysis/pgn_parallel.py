"""Reading a big PGN file on every core: even with the moves played by the
native core (inputs.MainlineTokens), python-chess's reader cuts ~150,000
positions a second into games and tokens on one. The file is cut where a
game begins (an `[Event ` tag after a blank line, which no game holds),
each part is read in a Python process of its own (`python -m` this
module: no multiprocessing, which would import the caller's main script
again), and the parts' positions are joined in file order with their
lines and game numbers counted from the file's start: the same positions
and errors as reading it in one piece, which is also what happens when a
part's process fails.

Plain files of PARALLEL_BYTES or more only (a gzip stream cannot be cut
without reading it whole); others are read in one piece. `read_positions`
is inputs.read_positions with that done; `read_items`, what the analysis
reads through, gives each part whole, its positions as columns
(occurrences.py).
The annotated PGN output (pgn_out.py) is written in the same parts.
"""
from __future__ import annotations

import concurrent.futures
import io
import mmap
import os
import pathlib
import pickle
import subprocess
import sys
from typing import Iterable, Iterator, NamedTuple

from lc0_rocm import host
from lc0_rocm.analysis import inputs
from lc0_rocm.analysis.inputs import GameProblem, InputError, Position, Selection
from lc0_rocm.analysis.occurrences import Occurrences

PARALLEL_BYTES = 1 << 20     # ~130,000 positions: below, a process (~0.3 s to start) pays little
MIN_PART_BYTES = 256 << 10   # ~0.3 s of reading
GAME_START = b"\n[Event "


class Part(NamedTuple):
    """A part of a file read apart: its positions (lines and games counted
    within it) and its errors, each after the positions read before it."""
    source: str
    positions: Occurrences
    errors: list[tuple[int, InputError]]     # (positions before it, error), counted from the file's start
    line_offset: int
    game_offset: int

    def items(self) -> Iterator[Position | InputError]:
        """Its positions and errors in file order, as inputs.read_positions gives them."""
        shifted = Occurrences()
        shifted.extend(self.positions, self.source, self.line_offset, self.game_offset)
        at = 0
        for before, error in self.errors:
            yield from shifted[at:before]
            yield error
            at = before
        yield from shifted[at:]


def read_items(paths: Iterable[str], kind: str | None = None,
               selection: Selection = Selection()) -> Iterator[Position | InputError | Part]:
    """inputs.read_positions, each big plain PGN file read in parts (a Part
    each, its positions as columns)."""
    for path in paths:
        path = os.fspath(path)
        parts = parts_of(path) if (kind or inputs.kind_of(path)) == "pgn" else []
        if len(parts) > 1:
            yield from read_parts(path, parts, selection)
        else:
            yield from inputs.read_positions([path], kind, selection)


def read_positions(paths: Iterable[str], kind: str | None = None,
                   selection: Selection = Selection()) -> Iterator[Position | InputError]:
    """inputs.read_positions, each big plain PGN file read in parts."""
    for item in read_items(paths, kind, selection):
        if isinstance(item, Part):
            yield from item.items()
        else:
            yield item


def parts_of(path: str) -> list[tuple[int, int]]:
    """Byte ranges [start, end) of the file, each starting at a game (one
    range: read it in one piece)."""
    if path.lower().endswith(".gz"):
        return []
    try:
        size = os.path.getsize(path)
        workers = min(host.usable_cores(), size // MIN_PART_BYTES)
        if size < PARALLEL_BYTES or workers < 2:
            return [(0, size)]
        part = size // workers                # a part per process
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            cuts = [0]
            while len(cuts) < workers:
                at = _game_start(data, cuts[-1] + part)
                if at < 0:
                    break
                cuts.append(at)
    except (OSError, ValueError):            # unreadable here: the one-piece reader reports it
        return []
    cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:]))


def _game_start(data, offset: int) -> int:
    """The offset of the first `[Event ` line at or after `offset` that
    follows a blank line, or -1."""
    while offset < len(data):
        at = data.find(GAME_START, offset)
        if at < 0:
            return -1
        if data[at - 1:at] == b"\n" or data[at - 2:at] == b"\n\r":
            return at + 1
        offset = at + 1
    return -1


def read_parts(path: str, parts: list[tuple[int, int]], selection: Selection) -> Iterator[Part | Position | InputError]:
    """Every position of the file's parts, a process reading each, in file
    order; the file read in one piece when a part's process fails."""
    from lc0_rocm import native_core
    native_core.available()                   # built here, once, if the parts' processes will want it
    with concurrent.futures.ThreadPoolExecutor(len(parts), thread_name_prefix="pgn-part") as pool:
        results = list(pool.map(lambda part: _run_part(path, part, selection), parts))
    if any(r is None for r in results):
        yield from inputs.read_positions([path], "pgn", selection)
        return
    line_offset = game_offset = 0
    for k, (positions, problems, lines, games) in enumerate(results):
        results[k] = None                     # let each part go once it is handed on
        errors = [(before, item.error(line_offset, game_offset) if isinstance(item, GameProblem)
                   else item._replace(line=item.line + line_offset)) for before, item in problems]
        yield Part(path, positions, errors, line_offset, game_offset)
        line_offset += lines
        game_offset += games


def _run_part(path: str, part: tuple[int, int], selection: Selection):
    """read_part in a child Python (None when it fails)."""
    return run_module("lc0_rocm.analysis.pgn_parallel", [path, str(part[0]), str(part[1]),
                                                         str(selection.every), str(int(selection.played))])


def run_module(module: str, args: list[str], stdin: bytes = b""):
    """`python -m module args...` with this package importable, fed
    `stdin`: what it pickled on its stdout, or None when it failed."""
    package_root = str(pathlib.Path(__file__).resolve().parents[2])   # the folder holding lc0_rocm
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    try:
        done = subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, env=env,
                              check=False)
        if done.returncode != 0:
            return None
        return pickle.loads(done.stdout)
    except (OSError, pickle.UnpicklingError, EOFError):
        return None


def part_text(path: str, start: int, end: int):
    """Bytes [start, end) of the file as text, decoded as inputs.open_text
    decodes the whole file."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace", newline=None)


def lines_before(path: str, offsets: list[int]) -> list[int]:
    """The number of lines text reading (universal newlines) has read
    before each byte offset, each at a line's start."""
    counts, total, at = [], 0, 0
    with open(path, "rb") as f:
        for offset in offsets:            # a range at a time: the ranges start at lines' starts
            data = f.read(offset - at)
            total += data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
            counts.append(total)
            at = offset
    return counts


def read_part(path: str, start: int, end: int, selection: Selection) -> tuple[Occurrences, list, int, int]:
    """One part's positions as columns (lines and games numbered within
    it), its errors and game problems each after the positions before it,
    its lines and its games."""
    handle = part_text(path, start, end)
    lines = inputs.LineCounter(handle)
    positions, problems = Occurrences(), []
    for item in inputs.pgn_items(path, handle, selection, lines):
        if isinstance(item, Position):
            positions.append(item)
        else:
            problems.append((len(positions), item))
    while lines.readline():                  # trailing blank lines count too
        pass
    positions.finish()
    return positions, problems, lines.count, lines.games


def main(argv: list[str]) -> int:
    """A part's process: PATH START END EVERY PLAYED -> the pickled
    read_part result on stdout."""
    path, start, end, every, played = argv
    result = read_part(path, int(start), int(end), Selection(int(every), bool(int(played))))
    sys.stdout.buffer.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
