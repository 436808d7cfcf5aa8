"""Inputs for the analysis tests, written into a test's folder: PGN games
(random legal games from a seed, one famous game, malformed ones), EPD
lines and FEN lines, each with a known number of positions and errors."""
from __future__ import annotations

import pathlib
import random

import chess
import chess.pgn

OPERA = """[Event "Paris"]
[Site "Paris FRA"]
[Date "1858.??.??"]
[White "Paul Morphy"]
[Black "Duke Karl / Count Isouard"]
[Result "1-0"]

1. e4 e5 2. Nf3 d6 3. d4 Bg4 4. dxe5 Bxf3 5. Qxf3 dxe5 6. Bc4 Nf6 7. Qb3 Qe7
8. Nc3 c6 9. Bg5 b5 10. Nxb5 cxb5 11. Bxb5+ Nbd7 12. O-O-O Rd8 13. Rxd7 Rxd7
14. Rd1 Qe6 15. Bxd7+ Nxd7 16. Qb8+ Nxb8 17. Rd8# 1-0
"""
OPERA_PLIES = 33

ILLEGAL = """[Event "Illegal move"]
[Result "*"]

1. e4 e5 2. Ke3 Nc6 *
"""

VARIANT = """[Event "Not chess"]
[Variant "Atomic"]
[Result "*"]

1. e4 e5 *
"""


def random_games(count: int, seed: int, max_plies: int = 40) -> list[chess.pgn.Game]:
    rng = random.Random(seed)
    games = []
    for g in range(count):
        board = chess.Board()
        game = chess.pgn.Game(headers={"Event": f"random {g}", "Result": "*"})
        node = game
        # The first moves of every game agree: repeated positions across games.
        for ply in range(rng.randint(max_plies // 2, max_plies)):
            moves = sorted(board.legal_moves, key=lambda m: m.uci())
            if not moves:
                break
            move = moves[0] if ply < 2 else rng.choice(moves)
            node = node.add_variation(move)
            board.push(move)
        games.append(game)
    return games


def write_pgn(path: pathlib.Path, games: list[chess.pgn.Game], extra: list[str] = ()) -> pathlib.Path:
    text = "\n\n".join(str(g) for g in games)
    path.write_text("\n\n".join([OPERA, *extra, text]) + "\n")
    return path


EPD_LINES = [
    'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "start";',
    "not an epd line at all",
    'r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - bm Qxf7#; id "scholar";',
    'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id "start again";',
    "8/8/8/8/8/8/8/8 w - - id \"empty board\";",
    'rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - hmvc 1; fmvn 3; id "mated";',
]
EPD_ERROR_LINES = [2, 5]

FEN_LINES = [
    "# a comment",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves e2e4 e7e5 g1f3",
    "",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves e2e5",
]
FEN_ERROR_LINES = [6]


def write_lines(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    path.write_text("\n".join(lines) + "\n")
    return path
