"""Varied positions for the encoder and Network parity tests.

Each entry is (name, board). They cover: games from the start position with
histories, castling rights lost one by one, en passant (legal, pseudo-legal
only, and a double push nobody can capture), promotions and underpromotions
for both colours, 2- and 3-fold repetitions, black to move, high rule-50
counts, positions from a FEN with no history, FENs with an e.p. square, and
pawnless positions that exercise every canonical transform."""
from __future__ import annotations

import random

import chess

from lc0_rocm import encoder as _encoder


def _game(fen: str | None, moves: list[str]) -> chess.Board:
    board = chess.Board(fen) if fen else chess.Board()
    for uci in moves:
        move = chess.Move.from_uci(uci)
        if move not in board.legal_moves:
            raise ValueError(f"illegal {uci} in {board.fen()}")
        board.push(move)
    return board


def _prefixes(name: str, fen: str | None, moves: list[str], every: int = 1):
    """The position after each `every`-th prefix of a game, with its history."""
    return [(f"{name}[{n}]", _game(fen, moves[:n])) for n in range(0, len(moves) + 1, every)]


CASTLING_FEN = "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1"
CASTLING_LOSSES = ["h1g1", "a8b8", "g1h1", "b8a8", "a1b1", "h8g8", "b1a1", "g8h8", "e1d1", "e8d8"]

EP_GAME = ["e2e4", "a7a6", "e4e5", "d7d5", "e5d6", "c7c5", "a2a4", "c5c4", "b2b4", "c4b3"]
# After d2d4 the black pawn on e4 attacks d3 but is pinned: lc0 still sets e.p.
PINNED_EP_FEN = "4k3/4r3/8/8/4p3/8/3P4/4K3 w - - 0 1"

PROMOTION_FEN = "1n2k3/P1P5/8/8/8/8/K4p1p/6N1 w - - 0 40"
PROMOTION_GAME = ["a7b8n", "h2g1r", "c7c8b", "e8e7", "c8a6", "f2f1q", "a6b5", "e7d6"]

KNIGHT_DANCE = ["g1f3", "g8f6", "f3g1", "f6g8"] * 2 + ["g1f3", "g8f6"]

FENS = [
    "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",     # e.p. for white
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",     # e.p. for black
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",      # nobody can capture
    "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 7 30",
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "8/8/4k3/8/8/4K3/8/7R w - - 99 120",
    "8/5k2/8/3B4/8/2K5/8/8 b - - 75 150",
    "2kr3r/ppp2ppp/2n5/2b1p3/4P1b1/2NP1N2/PPP2PPP/R1B1K2R b KQ - 3 10",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 30",
    "3r2k1/1P6/8/8/8/8/6K1/8 w - - 0 1",
    "8/8/8/8/8/8/1p4k1/R3K3 b Q - 0 1",
    # pawnless: king placements for every canonical transform and the diagonal tie-breaks
    "8/8/4k3/8/8/2K5/8/8 w - - 10 50",          # king c3: flip
    "8/8/4k3/8/2Q5/8/5K2/8 b - - 33 80",        # black king e6 -> mirror
    "8/8/8/8/8/2k5/6K1/7q w - - 5 70",          # king g2 on the diagonal
    "8/8/8/8/4K3/8/1k6/8 w - - 0 1",            # king e4 on the diagonal, symmetric tie
    "8/8/8/8/8/8/1k5K/8 w - - 0 1",             # king h2: transpose
    "8/1K6/8/8/8/8/8/6k1 w - - 3 60",           # king b7: flip + mirror
    "8/8/8/8/2K5/8/8/k7 b - - 2 60",            # black king a1
    "6k1/8/8/8/3B4/8/5N2/7K w - - 0 1",          # king h1, tie broken by pieces
    "1r6/8/8/3k4/8/8/6K1/1R6 w - - 0 1",         # king g2, tie broken by all pieces
    "8/8/8/8/8/5K2/8/1k1b1n2 w - - 0 1",         # king f3 on the diagonal
    "7k/8/8/8/8/8/8/K7 b - - 40 90",
    "8/8/8/8/3k4/8/8/4K2Q b - - 0 1",
    "8/5K2/8/8/8/8/8/1k6 w - - 0 1",             # king f7: mirror
    "8/7K/8/8/8/8/8/1k6 w - - 6 20",             # king h7: mirror + transpose
    "8/6K1/8/8/8/2k5/8/3r4 w - - 0 1",           # king g7: mirror, diagonal tie
]


# Our king on the a8-h1 diagonal with no pawns: lc0 breaks the transpose tie by
# comparing bitboards in turn (all, ours, kings, queens, rooks, knights); one
# position per deciding bitboard, with and without the resulting transpose.
TIE_BREAK_FENS = [
    "8/8/8/8/4r3/1k6/6K1/8 w - - 0 1",
    "5k2/8/7n/7N/8/5K1N/8/2nN1N2 w - - 0 1",
    "8/8/2k5/8/8/6b1/5BK1/8 w - - 0 1",
    "8/8/3N4/2n5/6b1/7n/4k3/5n1K w - - 0 1",
    "5b2/8/8/8/8/k7/6K1/8 w - - 0 1",
    "7k/8/8/8/8/5K2/8/n7 w - - 0 1",
    "1b6/q7/8/8/4k3/8/8/7K w - - 0 1",
    "2q5/1k6/q5nq/8/8/8/2n5/2r4K w - - 0 1",
    "4b3/5n2/8/8/b3k3/1r6/6K1/8 w - - 0 1",
    "k7/2r5/1n6/8/4K3/7n/8/5n2 w - - 0 1",
    "8/8/3B4/2B5/4K3/6b1/5nk1/8 w - - 0 1",
    "6N1/8/8/5n2/8/3b1kn1/N4n2/7K w - - 0 1",
    "8/3r4/2k5/1r5B/8/8/6K1/3B4 w - - 0 1",
]


def _random_game(seed: int, plies: int) -> chess.Board:
    rng = random.Random(seed)
    board = chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
    return board


def positions() -> list[tuple[str, chess.Board]]:
    out = []
    out += _prefixes("castling", CASTLING_FEN, CASTLING_LOSSES)
    out += _prefixes("ep", None, EP_GAME)
    out += _prefixes("pinned-ep", PINNED_EP_FEN, ["d2d4", "e7d7", "d4d5"])
    out += _prefixes("promotion", PROMOTION_FEN, PROMOTION_GAME)
    out += _prefixes("knights", None, KNIGHT_DANCE)            # 2- and 3-fold repetitions
    out += _prefixes("fen-knights", "8/8/4k3/8/8/4K3/8/6N1 w - - 20 60",
                     ["g1f3", "e6e7", "f3g1", "e7e6", "g1f3", "e6e7", "f3g1", "e7e6", "e3e4"])
    out += _prefixes("castle-game", None, ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6",
                                           "e1g1", "f8c5", "d2d3", "e8g8", "c1g5", "d7d6"], every=3)
    out += [(f"fen{i}", chess.Board(fen)) for i, fen in enumerate(FENS)]
    out += [(f"tie{i}", chess.Board(fen)) for i, fen in enumerate(TIE_BREAK_FENS)]
    for i, fen in enumerate(FENS[:3]):  # FEN with an e.p. square, then a few moves
        board = chess.Board(fen)
        for move in list(board.legal_moves)[:2]:
            child = board.copy()
            child.push(move)
            out.append((f"fen{i}+{move.uci()}", child))
    out += [(f"random{seed}-{plies}", _random_game(seed, plies))
            for seed, plies in ((1, 7), (2, 20), (3, 41), (4, 80), (5, 120), (6, 200))]
    return out


def lc0_v0321_transform_square(square: int, transform: int) -> int:
    """How lc0 v0.32.1's MoveToNNIndex maps squares: a rank flip for MIRROR or
    TRANSPOSE and a file flip for FLIP or TRANSPOSE."""
    rank, file = divmod(square, 8)
    if transform & (_encoder.MIRROR | _encoder.TRANSPOSE):
        rank = 7 - rank
    if transform & (_encoder.FLIP | _encoder.TRANSPOSE):
        file = 7 - file
    return rank * 8 + file
