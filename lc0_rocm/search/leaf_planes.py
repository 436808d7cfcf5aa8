"""Fast input planes and policy indices for search leaves, classical input
format 1 (the castling-plane and canonical formats go through the encoder): read straight from the PositionWalker's
history instead of walking python-chess's move stack. Must equal
`lc0_rocm.encoder` (tests/test_search_planes.py checks it); other formats go
through the encoder."""
from __future__ import annotations

import chess
import numpy as np

from lc0_rocm import encoder, tables

FAST_FORMATS = (encoder.INPUT_CLASSICAL,)
ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF
_HISTORY = 8
_STARTPOS_KEY = None   # set below


def _pieces(key: tuple) -> tuple[list[int], list[int]]:
    """(white P N B R Q K, black P N B R Q K) from a positions.board_key."""
    pawns, knights, bishops, rooks, queens, kings, white, black = key[:8]
    by_type = (pawns, knights, bishops, rooks, queens, kings)
    return [bb & white for bb in by_type], [bb & black for bb in by_type]


def _undo_double_push(white: list[int], black: list[int], turn: chess.Color, ep_square: int):
    f = chess.square_file(ep_square)
    white, black = list(white), list(black)
    if turn == chess.BLACK:      # white just pushed f2-f4
        white[0] = (white[0] & ~chess.BB_SQUARES[24 + f]) | chess.BB_SQUARES[8 + f]
    else:                        # black just pushed f7-f5
        black[0] = (black[0] & ~chess.BB_SQUARES[32 + f]) | chess.BB_SQUARES[48 + f]
    return white, black


def planes_classical(walker, input_format: int = 1) -> tuple[np.ndarray, int]:
    """(112 masks (uint64), rule-50 value) for the walker's position."""
    keys, reps = walker.keys, walker.repetitions
    cur = len(keys) - 1
    turn = keys[cur][8]
    black = turn == chess.BLACK
    rows: list[int] = []
    index = cur
    for _ in range(_HISTORY):
        if index >= 0:
            white_bb, black_bb = _pieces(keys[index])
            repeated = reps[index] >= 1
        else:                     # before the game's first position
            if walker.root_is_startpos:
                break
            white_bb, black_bb = _pieces(keys[0])
            if walker.root_ep is not None:
                white_bb, black_bb = _undo_double_push(white_bb, black_bb, keys[0][8], walker.root_ep)
            repeated = False
        rows += (black_bb + white_bb) if black else (white_bb + black_bb)
        rows.append(ALL_ONES if repeated else 0)
        index -= 1
    masks = np.zeros(112, dtype=np.uint64)
    if rows:
        history = np.array(rows, dtype=np.uint64)
        # Side-to-move frame: black's boards are mirrored rank-wise, which for
        # a little-endian bitboard is a byte swap.
        masks[:len(rows)] = history.byteswap() if black else history
    board = walker.board
    us, them = turn, not turn
    aux = (
        ALL_ONES if board.has_queenside_castling_rights(us) else 0,
        ALL_ONES if board.has_kingside_castling_rights(us) else 0,
        ALL_ONES if board.has_queenside_castling_rights(them) else 0,
        ALL_ONES if board.has_kingside_castling_rights(them) else 0,
        ALL_ONES if black else 0, ALL_ONES, 0, ALL_ONES)
    masks[104:] = aux
    return masks, walker.rule50[cur]


_INDEX_CACHE: dict = {}


def policy_indices_classical(board: chess.Board, moves: list[chess.Move],
                             transform: int = 0) -> list[int]:
    """lc0 policy indices of `moves` (side-to-move frame, castling as king
    takes rook, squares under the planes' `transform` for canonical
    formats), for standard chess; equal to encoder.policy_indices."""
    flip = 56 if board.turn == chess.BLACK else 0
    kings = board.kings
    out = []
    cache = _INDEX_CACHE
    for move in moves:
        is_king = bool(kings & (1 << move.from_square))
        key = (move.from_square, move.to_square, move.promotion, is_king, flip, transform)
        index = cache.get(key)
        if index is None:
            frm, to = move.from_square, move.to_square
            if is_king and abs(chess.square_file(to) - chess.square_file(frm)) == 2:
                rook_file = 7 if chess.square_file(to) > chess.square_file(frm) else 0
                to = chess.square(rook_file, chess.square_rank(frm))
            frm, to = frm ^ flip, to ^ flip
            if transform:
                frm = int(encoder.transform_square(frm, transform))
                to = int(encoder.transform_square(to, transform))
            slot = tables.PROMOTION_SLOT[chess.piece_symbol(move.promotion) if move.promotion else ""]
            index = int(tables.MOVE_INDEX[frm, to, slot])
            if index < 0:
                raise ValueError(f"move without an lc0 policy index: {move.uci()}")
            cache[key] = index
        out.append(index)
    return out
