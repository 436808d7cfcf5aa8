"""lc0's policy tables, generated from the chess rules.

Squares are numbered a1 = 0, b1 = 1, ..., h8 = 63 (square = 8 * rank + file).
Everything here is in the side-to-move frame: the mover's pawns go "up".

1858 policy moves (`POLICY_MOVES`, lc0's order)
    First every queen-like and knight move, grouped by from-square a1..h8 and,
    within a from-square, sorted by to-square (a1..h8). A pawn push or capture
    to rank 8 appears here as a plain move ("a7a8"); that plain index is the one
    a knight promotion uses. Then the queen, rook and bishop promotions: from
    a7..h7 (file order), to-file ascending (left capture, push, right capture),
    pieces in the order q, r, b ("a7a8q", "a7a8r", "a7a8b", "a7b8q", ...).

Convolution policy head (`CONV_POLICY_MAP`, `CONV_POLICY_GATHER`)
    The head outputs 80 planes x 64 squares, flattened plane-major
    (flat = plane * 64 + from_square). 73 planes are used:
      planes 0..55   queen-like moves, plane = 7 * direction + (distance - 1),
                     directions clockwise from north: N, NE, E, SE, S, SW, W, NW
      planes 56..63  knight moves, (d_rank, d_file) = (+2,+1), (+1,+2), (-1,+2),
                     (-2,+1), (-2,-1), (-1,-2), (+1,-2), (+2,-1)
      planes 64..72  promotions from rank 7: plane = 64 + 3 * (d_file + 1) + piece,
                     piece 0 = rook, 1 = bishop, 2 = queen (lc0's assignment)
      planes 73..79  unused
    CONV_POLICY_MAP[flat] is the 1858 index or -1; CONV_POLICY_GATHER[i] is the
    flat position of policy move i, so `logits = conv_out.reshape(N, -1)[:, GATHER]`.

Attention policy head (`ATTN_POLICY_MAP`, `ATTN_POLICY_GATHER`)
    The head produces 64 * 64 + 8 * 24 = 4288 logits:
      [from * 64 + to]                 plain from-to moves (knight promotion included)
      [4096 + 24 * f + 3 * g + piece]  promotion from file f on rank 7 to file g on
                                       rank 8, piece 0 = queen, 1 = rook, 2 = bishop
    ATTN_POLICY_MAP[flat] is the 1858 index or -1; ATTN_POLICY_GATHER[i] is the
    flat position of policy move i.

`MOVE_INDEX` (64, 64, 4) gives the 1858 index of (from, to, promotion slot) with
slot 0 = no promotion or knight, 1 = queen, 2 = rook, 3 = bishop; -1 when the
move is not in the table.
"""
from __future__ import annotations

import numpy as np

from lc0_rocm.sizes import POLICY_SIZE

CONV_POLICY_PLANES = 80
ATTN_POLICY_SIZE = 64 * 64 + 8 * 24

# (d_rank, d_file), clockwise from north: the conv head's plane order.
QUEEN_DIRECTIONS = ((1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1))
KNIGHT_JUMPS = ((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1))
PROMOTION_PIECES = "qrb"                 # order within the 1858 list and attention block
CONV_PROMOTION_PIECES = "rbq"            # order within each conv promotion direction
PROMOTION_SLOT = {"": 0, "n": 0, "q": 1, "r": 2, "b": 3}

_FILES = "abcdefgh"


def square_name(square: int) -> str:
    return _FILES[square % 8] + str(square // 8 + 1)


def _conv_plane_of_step(d_rank: int, d_file: int) -> int | None:
    """Conv plane of a non-promotion move by its displacement, or None."""
    if (d_rank, d_file) in KNIGHT_JUMPS:
        return 56 + KNIGHT_JUMPS.index((d_rank, d_file))
    distance = max(abs(d_rank), abs(d_file))
    if distance == 0 or (d_rank != 0 and d_file != 0 and abs(d_rank) != abs(d_file)):
        return None
    direction = (d_rank // distance, d_file // distance)
    return 7 * QUEEN_DIRECTIONS.index(direction) + distance - 1


def _generate_moves() -> list[str]:
    moves = []
    for from_sq in range(64):
        rank, file = divmod(from_sq, 8)
        for to_sq in range(64):
            to_rank, to_file = divmod(to_sq, 8)
            if _conv_plane_of_step(to_rank - rank, to_file - file) is not None:
                moves.append(square_name(from_sq) + square_name(to_sq))
    for file in range(8):
        for to_file in range(file - 1, file + 2):
            if 0 <= to_file < 8:
                for piece in PROMOTION_PIECES:
                    moves.append(f"{_FILES[file]}7{_FILES[to_file]}8{piece}")
    return moves


POLICY_MOVES: tuple[str, ...] = tuple(_generate_moves())
assert len(POLICY_MOVES) == POLICY_SIZE
_INDEX_OF_UCI = {uci: i for i, uci in enumerate(POLICY_MOVES)}


def _parse_squares(uci: str) -> tuple[int, int, str]:
    from_sq = _FILES.index(uci[0]) + 8 * (int(uci[1]) - 1)
    to_sq = _FILES.index(uci[2]) + 8 * (int(uci[3]) - 1)
    return from_sq, to_sq, uci[4:]


def _build_move_index() -> np.ndarray:
    table = np.full((64, 64, 4), -1, dtype=np.int32)
    for i, uci in enumerate(POLICY_MOVES):
        from_sq, to_sq, promo = _parse_squares(uci)
        table[from_sq, to_sq, PROMOTION_SLOT[promo]] = i
    return table


MOVE_INDEX = _build_move_index()


def move_index(uci: str) -> int:
    """1858 index of a move in the side-to-move frame, given as UCI.

    Castling must already be king-takes-rook (e1h1); "n" promotions map to the
    plain move. Raises ValueError for a move that is not in lc0's table.
    """
    key = uci[:4] if uci[4:] == "n" else uci
    try:
        return _INDEX_OF_UCI[key]
    except KeyError:
        raise ValueError(f"{uci!r} is not one of lc0's 1858 policy moves") from None


def _build_conv_map() -> np.ndarray:
    table = np.full(CONV_POLICY_PLANES * 64, -1, dtype=np.int32)
    for i, uci in enumerate(POLICY_MOVES):
        from_sq, to_sq, promo = _parse_squares(uci)
        d_rank, d_file = to_sq // 8 - from_sq // 8, to_sq % 8 - from_sq % 8
        if promo:
            plane = 64 + 3 * (d_file + 1) + CONV_PROMOTION_PIECES.index(promo)
        else:
            plane = _conv_plane_of_step(d_rank, d_file)
        table[plane * 64 + from_sq] = i
    return table


def _build_attn_map() -> np.ndarray:
    table = np.full(ATTN_POLICY_SIZE, -1, dtype=np.int32)
    for i, uci in enumerate(POLICY_MOVES):
        from_sq, to_sq, promo = _parse_squares(uci)
        if promo:
            flat = 4096 + 24 * (from_sq % 8) + 3 * (to_sq % 8) + PROMOTION_PIECES.index(promo)
        else:
            flat = from_sq * 64 + to_sq
        table[flat] = i
    return table


def _gather_of(policy_map: np.ndarray) -> np.ndarray:
    """Invert a map (flat -> 1858 index or -1) into (1858,) flat positions."""
    gather = np.full(POLICY_SIZE, -1, dtype=np.int64)
    used = np.flatnonzero(policy_map >= 0)
    gather[policy_map[used]] = used
    assert (gather >= 0).all()
    return gather


CONV_POLICY_MAP = _build_conv_map()
CONV_POLICY_GATHER = _gather_of(CONV_POLICY_MAP)
ATTN_POLICY_MAP = _build_attn_map()
ATTN_POLICY_GATHER = _gather_of(ATTN_POLICY_MAP)

for _table in (MOVE_INDEX, CONV_POLICY_MAP, CONV_POLICY_GATHER, ATTN_POLICY_MAP, ATTN_POLICY_GATHER):
    _table.setflags(write=False)
