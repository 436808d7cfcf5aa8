"""Generate tests/data/perft_random_d3.txt.gz: positions from random games
(standard chess and Chess960) with their perft(3) counted by python-chess,
for tests/test_native_core_rules.py. Run once; the output is committed.

    python3 scripts/gen_perft_positions.py [--count 1000] [--seed 2026]

Each line: FEN | 0 or 1 (Chess960) | perft(3).
"""
from __future__ import annotations

import argparse
import gzip
import pathlib
import random
import sys

import chess

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from lc0_rocm.native_rules import python_perft as perft  # noqa: E402  python-chess's counts

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "perft_random_d3.txt.gz"


def random_position(rng: random.Random, chess960: bool) -> chess.Board:
    """A position `plies` random moves into a random game (back to the last
    position with legal moves if the game ended)."""
    board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
    plies = rng.randrange(0, 160)
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        # Prefer captures and pawn moves a little: more promotions, e.p. and endgames.
        weighted = [m for m in moves if board.is_capture(m) or board.piece_type_at(m.from_square) == chess.PAWN]
        board.push(rng.choice(weighted if weighted and rng.random() < 0.4 else moves))
    return board


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--chess960-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    lines = []
    while len(lines) < args.count:
        chess960 = rng.random() < args.chess960_share
        board = random_position(rng, chess960)
        if board.is_game_over(claim_draw=False) and not board.legal_moves:
            continue
        fen = board.fen(en_passant="fen")
        lines.append(f"{fen}|{int(chess960)}|{perft(chess.Board(fen, chess960=chess960), 3)}")
        if len(lines) % 100 == 0:
            print(f"{len(lines)} positions", file=sys.stderr)
    with gzip.open(OUT, "wt") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
