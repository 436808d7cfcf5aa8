"""The positions of a run as columns (lc0_rocm/analysis/occurrences.py):
what goes in comes back as the same Position tuples, rows are held once,
a part appended with offsets is the part's positions moved, and a table
pickles (a part's process sends one)."""
from __future__ import annotations

import pickle

import pytest

from lc0_rocm.analysis.inputs import Position
from lc0_rocm.analysis.occurrences import Occurrences

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
AFTER_E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"

POSITIONS = [
    Position("a.pgn", 1, 1, 0, START, START, "e2e4"),
    Position("a.pgn", 1, 1, 1, AFTER_E4, f"{START} moves e2e4", None),
    Position("a.pgn", 9, 2, 0, START, START, None),                       # a row met before
    Position("s.epd", 3, None, 0, "8/8/8/8/8/8/8/K1k5 w - - 0 1", "8/8/8/8/8/8/8/K1k5 w - - 0 1", None,
             'ü \\ "id"'),
    Position("ü dir/f.fen", 4, None, 0, "not a fen é", "not a fen é", None, ""),   # an empty id is an id
    Position("a.pgn", 12, 1_000_000, 300, START, START, "a7a8q"),
]


def test_positions_come_back_as_they_went_in():
    table = Occurrences(POSITIONS)
    assert len(table) == len(POSITIONS)
    assert list(table) == POSITIONS
    assert [table[i] for i in range(-len(POSITIONS), 0)] == POSITIONS
    assert table[1:4] == POSITIONS[1:4] and table[4:2] == []
    with pytest.raises(IndexError):
        table[len(POSITIONS)]
    assert table.rows == [START, f"{START} moves e2e4", "8/8/8/8/8/8/8/K1k5 w - - 0 1", "not a fen é"]
    assert list(table.tasks) == [0, 1, 0, 2, 3, 0]


def test_a_part_appended_is_its_positions_moved():
    part = Occurrences(POSITIONS[:4] + POSITIONS[5:])
    part.finish()
    table = Occurrences(POSITIONS[4:5])
    table.extend(part, "big.pgn", line_offset=100, game_offset=7)
    moved = [p._replace(source="big.pgn", line=p.line + 100, game=None if p.game is None else p.game + 7)
             for p in part]
    assert list(table) == POSITIONS[4:5] + moved
    assert table.rows == ["not a fen é", START, f"{START} moves e2e4", "8/8/8/8/8/8/8/K1k5 w - - 0 1"]
    assert list(table.tasks) == [0, 1, 2, 1, 3, 1]
    table.extend(Occurrences(), "empty.pgn")
    assert len(table) == 6
    table.append(POSITIONS[1])                # rows still held once after a finish
    assert list(table.tasks)[-1] == 2 and len(table.rows) == 4


def test_a_table_pickles_without_its_row_index():
    table = Occurrences(POSITIONS)
    again = pickle.loads(pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
    assert list(again) == POSITIONS and again.rows == table.rows and again._index is None
    again.append(POSITIONS[0])
    assert list(again.tasks)[-1] == 0


def test_a_source_s_lines_are_found_when_its_positions_are_one_run_in_file_order():
    run = [Position("b.pgn", line, 1, ply, START, START, None) for line, ply in ((5, 0), (5, 1), (20, 0))]
    table = Occurrences(POSITIONS[3:5] + run + POSITIONS[3:4])
    first, lines = table.source_lines("b.pgn")
    assert first == 2 and lines.tolist() == [5, 5, 20]
    first, lines = table.source_lines("nowhere.pgn")
    assert first == 0 and len(lines) == 0
    assert table.source_lines("s.epd") is None                  # two runs
    assert Occurrences(run + run).source_lines("b.pgn") is None  # one run, but the file twice over
