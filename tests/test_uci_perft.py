"""UCI `go perft N` (Stockfish's output) through the native core, and through
python-chess when there is no core."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import chess
import pytest

from lc0_rocm import native_core, native_rules, uci

ROOT = pathlib.Path(__file__).resolve().parent.parent


def expected_report(board: chess.Board, depth: int) -> list[str]:
    lines, total = [], 0
    for move in board.legal_moves:
        name = board.uci(move)
        board.push(move)
        count = native_rules.python_perft(board, depth - 1)
        board.pop()
        lines.append(f"{name}: {count}")
        total += count
    return sorted(lines) + ["", f"Nodes searched: {total}"]


def sorted_report(lines: list[str]) -> list[str]:
    blank = lines.index("")
    return sorted(lines[:blank]) + lines[blank:]


@pytest.mark.real_engine
def test_go_perft_in_the_real_engine_process():
    commands = ["uci", "position startpos moves e2e4 e7e5 g1f3", "go perft 3",
                "setoption name UCI_Chess960 value true",
                "position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "go perft 2",
                "go perft 99", "go perft", "isready", "quit"]
    r = subprocess.run([sys.executable, "-m", "lc0_rocm"], input="\n".join(commands) + "\n",
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    first = out.index(next(line for line in out if line.startswith("uciok"))) + 1
    reports, current = [], []
    for line in out[first:]:
        current.append(line)
        if line.startswith("Nodes searched:"):
            reports.append(current)
            current = []
    board = chess.Board()
    for move in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(move)
    assert sorted_report(reports[0]) == expected_report(board, 3)
    board960 = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", chess960=True)
    assert sorted_report(reports[1]) == expected_report(board960, 2)
    assert any(line.startswith("e1h1: ") for line in reports[1])   # Chess960 castling text
    assert "info string error go perft: depth must be 1..10" in current
    assert "info string error go perft: expected one depth, e.g. `go perft 5`" in current
    assert current[-1] == "readyok"


def test_go_perft_without_the_core_uses_python_chess(monkeypatch):
    lines: list[str] = []
    engine = uci.UciEngine(lines.append)
    engine.handle("position fen 4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
    try:
        native_core.load()
        engine.handle("go perft 3")
        native_lines = list(lines)
    except native_core.NoCompilerError:
        native_lines = None
    lines.clear()
    monkeypatch.setattr(native_core, "available", lambda: (False, "turned off for the test"))
    engine.handle("go perft 3")
    board = chess.Board("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2")
    assert sorted_report(lines) == expected_report(board, 3)
    assert "e5d6: " + str(native_rules.python_perft(chess.Board("4k3/8/3P4/8/8/8/8/4K3 b - - 0 2"), 2)) in lines
    if native_lines is not None:
        assert sorted_report(native_lines) == sorted_report(lines)


def test_go_perft_of_a_position_the_core_refuses_falls_back_and_bad_depths_are_errors():
    lines: list[str] = []
    engine = uci.UciEngine(lines.append)
    fen = "4k3/8/8/8/8/8/PPPPPPPP/QQQQKQQ1 w - - 0 1"   # more promoted queens than missing pawns
    engine.handle(f"position fen {fen}")
    engine.handle("go perft 2")
    assert sorted_report(lines) == expected_report(chess.Board(fen), 2)
    for bad in ("go perft", "go perft x", "go perft 1 2", "go perft 0", "go perft 11", "go perft \u00b2"):
        lines.clear()
        engine.handle(bad)
        # an error, and the bestmove every `go` that cannot run is owed (issue 69)
        assert len(lines) == 2 and lines[0].startswith("info string error go perft: "), (bad, lines)
        assert lines[1] == "bestmove (none)"
