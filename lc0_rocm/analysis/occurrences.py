"""Every position a run reads, in input order, as columns: where it came
from (source, line, game, ply), its FEN, the move played from it and its
EPD id, and the distinct rows once (`rows`, in first-occurrence order;
`tasks[i]` is position i's row). A Position tuple with its strings and
numbers as Python objects held ~550 bytes a position (a database of 5
million positions: ~2.7 GB before any result); here a position takes ~110
bytes beside its row's string, held once. Indexing gives the Position back.

A file read in parts (pgn_parallel) fills a table per part in the part's
process; `extend` appends one to the run's with its lines and games
counted from the file's start, without a Python object per position.
"""
from __future__ import annotations

from array import array
from typing import Iterable, Iterator

import numpy as np

from lc0_rocm.analysis.inputs import Position

NO_GAME = -1


class Occurrences:
    """Positions in input order (a sequence of Position) and their distinct rows."""

    def __init__(self, positions: Iterable[Position] = ()):
        self.rows: list[str] = []
        self.tasks = array("q")                 # position -> row
        self._index: dict[str, int] | None = {}    # row -> its index while rows are added
        self._sources: list[str] = []
        self._source_ids: dict[str, int] = {}
        self._source = array("i")
        self._line = array("q")
        self._game = array("q")                 # NO_GAME: not a game's position
        self._ply = array("i")
        self._fen = bytearray()
        self._fen_end = array("q")
        self._played = bytearray()
        self._played_end = array("q")           # an empty move: none played
        self._ids: dict[int, str] = {}          # position -> EPD id, where it has one
        for p in positions:
            self.append(p)

    def __len__(self) -> int:
        return len(self.tasks)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_index"] = None                  # rebuilt only if rows are added again
        return state

    def _task(self, row: str) -> int:
        if self._index is None:
            self._index = {r: t for t, r in enumerate(self.rows)}
        return _number(self._index, self.rows, row)

    def _source_id(self, source: str) -> int:
        return _number(self._source_ids, self._sources, source)

    def append(self, p: Position) -> None:
        self.tasks.append(self._task(p.row))
        self._source.append(self._source_id(p.source))
        self._line.append(p.line)
        self._game.append(NO_GAME if p.game is None else p.game)
        self._ply.append(p.ply)
        self._fen += p.fen.encode()
        self._fen_end.append(len(self._fen))
        if p.played:
            self._played += p.played.encode()
        self._played_end.append(len(self._played))
        if p.id is not None:
            self._ids[len(self.tasks) - 1] = p.id

    def extend(self, part: "Occurrences", source: str, line_offset: int = 0, game_offset: int = 0) -> None:
        """Append `part`'s positions as read from `source` (whatever source
        they had), their lines and game numbers moved by the offsets."""
        if not len(part):
            return
        first = len(self)
        mapping = np.array([self._task(row) for row in part.rows], dtype=np.int64)
        self.tasks.frombytes(mapping[_ints(part.tasks)].tobytes())
        self._source.frombytes(np.full(len(part), self._source_id(source), dtype=np.int32).tobytes())
        self._line.frombytes((_ints(part._line) + line_offset).tobytes())
        games = _ints(part._game)
        self._game.frombytes(np.where(games == NO_GAME, NO_GAME, games + game_offset).tobytes())
        self._ply.extend(part._ply)
        for blob, ends, theirs, their_ends in ((self._fen, self._fen_end, part._fen, part._fen_end),
                                               (self._played, self._played_end, part._played, part._played_end)):
            ends.frombytes((_ints(their_ends) + len(blob)).tobytes())
            blob += theirs
        for i, ident in part._ids.items():
            self._ids[first + i] = ident

    def part(self, start: int, stop: int) -> tuple["Occurrences", np.ndarray]:
        """Positions start..stop-1 as a table of their own (its rows those
        they name, in row order) and those rows' indices here."""
        named, local = np.unique(_ints(self.tasks)[start:stop], return_inverse=True)
        out = Occurrences()
        out._index = None
        out.rows = [self.rows[t] for t in named.tolist()]
        out.tasks = array("q", local.astype(np.int64).tobytes())
        out._sources, out._source_ids = list(self._sources), dict(self._source_ids)
        out._source, out._line = self._source[start:stop], self._line[start:stop]
        out._game, out._ply = self._game[start:stop], self._ply[start:stop]
        out._fen, out._fen_end = _blob_part(self._fen, self._fen_end, start, stop)
        out._played, out._played_end = _blob_part(self._played, self._played_end, start, stop)
        out._ids = {i - start: ident for i, ident in self._ids.items() if start <= i < stop}
        return out, named

    def source_lines(self, source: str) -> tuple[int, np.ndarray] | None:
        """(the index of `source`'s first position, the lines of its
        positions) when they are one run of positions with their lines in
        file order; (0, no lines) when it has none; None otherwise (the
        file given twice)."""
        sid = self._source_ids.get(source)
        where = np.flatnonzero(_ints(self._source) == sid) if sid is not None else []
        if not len(where):
            return 0, np.zeros(0, dtype=np.int64)
        first, last = int(where[0]), int(where[-1])
        lines = _ints(self._line)[first:last + 1]
        if len(lines) != len(where) or np.any(np.diff(lines) < 0):
            return None
        return first, lines

    def finish(self) -> None:
        """No more rows: the index from row to task is let go."""
        self._index = None

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            return self._span(start, stop) if step == 1 else [self[k] for k in range(start, stop, step)]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("position index out of range")
        return self._span(i, i + 1)[0]

    def _span(self, start: int, stop: int) -> list[Position]:
        """Positions start..stop-1, their strings cut from one decoded text
        each (a writer's chunk)."""
        if start >= stop:
            return []
        fens = _strings(self._fen, self._fen_end, start, stop)
        played = _strings(self._played, self._played_end, start, stop)
        sources, rows, ids, tasks = self._sources, self.rows, self._ids, self.tasks
        make = tuple.__new__
        return [make(Position, (sources[s], line, None if game == NO_GAME else game, ply, fen, rows[tasks[i]],
                                move or None, ids.get(i) if ids else None))
                for i, s, line, game, ply, fen, move in zip(
                    range(start, stop), self._source[start:stop], self._line[start:stop],
                    self._game[start:stop], self._ply[start:stop], fens, played)]

    def __iter__(self) -> Iterator[Position]:
        for i in range(len(self)):
            yield self[i]


def _blob_part(blob: bytearray, ends: array, start: int, stop: int) -> tuple[bytearray, array]:
    """The strings start..stop-1 of a blob cut at `ends`, as a blob and ends of their own."""
    first = ends[start - 1] if start else 0
    theirs = _ints(ends)[start:stop] - first
    return bytearray(blob[first:first + (int(theirs[-1]) if len(theirs) else 0)]), array("q", theirs.tobytes())


def _number(index: dict, values: list, value) -> int:
    """value's place in `values` (appended when new), found through `index`."""
    number = index.get(value)
    if number is None:
        number = index[value] = len(values)
        values.append(value)
    return number


def _strings(blob: bytearray, ends: array, start: int, stop: int) -> list[str]:
    """The strings start..stop-1 of a blob cut at `ends`."""
    first = ends[start - 1] if start else 0
    cuts = [c - first for c in ends[start:stop]]
    data = bytes(blob[first:cuts[-1] + first])
    text = data.decode()
    if len(text) != len(data):                   # not ASCII: cut the bytes, then decode each
        return [data[a:b].decode() for a, b in zip([0] + cuts[:-1], cuts)]
    return [text[a:b] for a, b in zip([0] + cuts[:-1], cuts)]


def _ints(column: array) -> np.ndarray:
    """An array module column as numpy integers of its width."""
    return np.frombuffer(column, dtype=np.int64 if column.itemsize == 8 else np.int32)
