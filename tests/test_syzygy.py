"""SyzygyPath loading and root move filtering (with a stand-in prober: no
Syzygy tables are installed on this machine)."""
from __future__ import annotations

import os

import chess
import pytest

from lc0_rocm import syzygy


class Prober:
    def __init__(self, values, names=("KQvK", "KRvK")):
        self.values = values          # board_fen -> WDL for the side to move there
        self.wdl = dict.fromkeys(names)

    def probe_wdl(self, board):
        return self.values[board.board_fen()]


def test_open_tablebases_errors(tmp_path):
    assert syzygy.open_tablebases("") is None
    with pytest.raises(syzygy.SyzygyError, match="not a folder"):
        syzygy.open_tablebases(str(tmp_path / "missing"))
    with pytest.raises(syzygy.SyzygyError, match="no Syzygy tables"):
        syzygy.open_tablebases(str(tmp_path))
    with pytest.raises(syzygy.SyzygyError, match="not a folder"):
        syzygy.open_tablebases(os.pathsep.join([str(tmp_path), str(tmp_path / "x")]))


def test_keeps_the_best_result_and_counts_probes():
    board = chess.Board("8/8/8/4k3/8/8/8/K1Q5 w - - 0 1")
    values = {}
    for move in board.legal_moves:
        board.push(move)
        values[board.board_fen()] = {"c1c5": 0, "c1e3": 0, "a1b1": 1}.get(move.uci(), -2)
        board.pop()
    moves, probes = syzygy.root_moves(Prober(values), board)
    assert probes == board.legal_moves.count()
    assert {m.uci() for m in moves} == {m.uci() for m in board.legal_moves} - {"c1c5", "c1e3", "a1b1"}
    only = [chess.Move.from_uci("c1c5"), chess.Move.from_uci("a1b1")]
    moves, probes = syzygy.root_moves(Prober(values), board, only)
    assert [m.uci() for m in moves] == ["c1c5"] and probes == 2      # a draw beats a blessed loss


def test_checkmate_ranks_as_win_without_probing():
    board = chess.Board("k7/8/1K6/8/8/8/8/7Q w - - 0 1")
    mate, check = chess.Move.from_uci("h1h8"), chess.Move.from_uci("h1a1")
    assert syzygy.root_moves(Prober({}), board, [mate]) == ([mate], 0)
    board.push(check)
    values = {board.board_fen(): 0}                   # say Qa1+ only draws
    board.pop()
    assert syzygy.root_moves(Prober(values), board, [check, mate]) == ([mate], 1)


def test_not_in_tablebase():
    assert syzygy.root_moves(None, chess.Board()) == (None, 0)
    assert syzygy.root_moves(Prober({}), chess.Board()) == (None, 0)          # too many pieces
    castling = chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1")
    assert syzygy.root_moves(Prober({}), castling) == (None, 0)
    board = chess.Board("8/8/8/4k3/8/8/8/K1Q5 w - - 0 1")
    moves, probes = syzygy.root_moves(Prober({}), board)                    # a table is missing
    assert moves is None and probes == 1
    assert syzygy.max_pieces(Prober({}, names=("KRPvKR",))) == 5
