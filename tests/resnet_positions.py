"""Varied chess positions for the convolution-body parity tests: game
histories, castling rights in every mix, en passant, promotions and
underpromotions, repetitions, black to move, high rule-50 counts, and
positions set up from a FEN with no history."""
from __future__ import annotations

import random

import chess

FENS = [
    # en passant possible (white, then black to move)
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",
    # e.p. square set but no capture possible
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    # promotions and underpromotions, both colours, with captures
    "3r2k1/1P6/8/8/8/8/6K1/8 w - - 0 1",
    "8/8/8/8/8/8/1p4k1/R3K3 b Q - 0 1",
    "1n1q4/P1P3k1/8/8/8/8/1p3pK1/2R1N3 w - - 0 40",
    # castling rights: all, some, none
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1",
    "r3k2r/8/8/8/8/8/8/R3K2R w Qk - 12 30",
    "r3k2r/8/8/8/8/8/8/R3K2R b - - 0 1",
    # high rule-50 counts
    "8/8/4k3/8/8/4K3/8/7R w - - 99 120",
    "8/5k2/8/3B4/8/2K5/8/8 b - - 75 150",
    # middlegame and endgame from FEN only
    "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 1 8",
    "2kr3r/ppp2ppp/2n5/2b1p3/4P1b1/2NP1N2/PPP2PPP/R1B1K2R b KQ - 3 10",
    "8/8/8/4k3/8/8/4K3/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 b - - 0 30",
]

# (start FEN or None for the start position, moves)
GAMES = [
    (None, []),
    (None, ["e2e4"]),
    (None, ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1"]),
    (None, ["d2d4", "d7d5", "c2c4", "e7e6", "b1c3", "g8f6", "c1g5", "f8e7", "e2e3", "e8g8"]),
    # repetitions: knights out and back twice
    (None, ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"]),
    (None, ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3"]),
    # en passant reached in play
    (None, ["e2e4", "a7a6", "e4e5", "d7d5"]),
    (None, ["a2a3", "e7e5", "a3a4", "e5e4", "d2d4"]),
    # history from a FEN start
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", ["e1g1", "e8c8", "a1d1"]),
    ("2r3k1/1P6/8/8/8/8/6K1/8 w - - 0 1", ["b7c8n", "g8f8", "c8d6"]),
    ("8/8/8/8/8/8/1p4k1/R3K3 b Q - 0 1", ["b2a1r", "e1d2", "a1a2"]),
    ("8/8/4k3/8/8/4K3/8/7R w - - 90 120", ["h1h6", "e6d5", "h6h5", "d5d6"]),
]


def random_games(count: int, seed: int = 1) -> list[chess.Board]:
    """Positions from seeded random games of varying length (captures,
    castling and promotions come up on their own)."""
    rng = random.Random(seed)
    boards = []
    for i in range(count):
        board = chess.Board()
        for _ in range(rng.randrange(4, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            # Prefer captures and promotions now and then to reach endgames.
            sharp = [m for m in moves if board.is_capture(m) or m.promotion]
            board.push(rng.choice(sharp if sharp and rng.random() < 0.5 else moves))
        if any(board.legal_moves):
            boards.append(board)
    return boards


def varied_positions() -> list[chess.Board]:
    boards = [chess.Board(fen) for fen in FENS]
    for fen, moves in GAMES:
        board = chess.Board(fen) if fen else chess.Board()
        for uci in moves:
            board.push_uci(uci)
        boards.append(board)
    boards += random_games(30)
    for b in boards:
        assert b.is_valid() and any(b.legal_moves), b.fen()
    return boards
