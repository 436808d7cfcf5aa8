"""Writes lc0_rocm/analysis/tactics.epd, the EPD suite `lc0-rocm suite` ships:
positions made here from a fixed seed (so the file is ours to license, MIT)
whose answers python-chess proves:

  mate1-*    a mate in one: bm = every mating move (at most two)
  mate2-*    a mate in two and none in one: bm = every first move that
             mates in two against any defence (at most two)
  capture-*  a free queen: bm = the one capture that a material search
             three plies deep finds best by at least 3 pawns; c0 gives it
             10 points
  avoid-*    am = the moves (at most three) after which the opponent mates
             in one; other moves do not allow it

Half of each kind has Black to move (the board mirrored). Run
`python scripts/make_tactics_suite.py` to rewrite the file; `--check FILE`
proves an existing file's answers again (tests/test_analysis_suite.py does).
"""
from __future__ import annotations

import argparse
import pathlib
import random
import sys

import chess

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = ROOT / "lc0_rocm" / "analysis" / "tactics.epd"
SEED = 20261203
PER_KIND = {"mate1": 8, "mate2": 6, "capture": 8, "avoid": 6}
VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9, chess.KING: 0}


# ---------------------------------------------------------------- proofs
def mates_in_one(board: chess.Board) -> list[chess.Move]:
    out = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            out.append(move)
        board.pop()
    return out


def mates_in_two(board: chess.Board) -> list[chess.Move]:
    """First moves after which every reply allows a mate in one."""
    out = []
    for move in list(board.legal_moves):
        board.push(move)
        replies = list(board.legal_moves)
        forced = bool(replies) and not board.is_game_over()
        for reply in replies if forced else ():
            board.push(reply)
            found = bool(mates_in_one(board))
            board.pop()
            if not found:
                forced = False
                break
        board.pop()
        if forced:
            out.append(move)
    return out


def material(board: chess.Board) -> int:
    """Side to move's material lead (mate: +-1000)."""
    if board.is_checkmate():
        return -1000
    if board.is_stalemate():
        return 0
    score = 0
    for piece in board.piece_map().values():
        score += VALUES[piece.piece_type] * (1 if piece.color == board.turn else -1)
    return score


def search(board: chess.Board, depth: int, alpha: int = -10000, beta: int = 10000) -> int:
    if depth == 0 or board.is_game_over():
        return material(board)
    best = -10000
    for move in board.legal_moves:
        board.push(move)
        value = -search(board, depth - 1, -beta, -alpha)
        board.pop()
        best = max(best, value)
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    return best


def move_values(board: chess.Board, depth: int = 3) -> list[tuple[int, chess.Move]]:
    out = []
    for move in board.legal_moves:
        board.push(move)
        out.append((-search(board, depth - 1), move))
        board.pop()
    return sorted(out, key=lambda vm: -vm[0])


def allows_mate(board: chess.Board) -> list[chess.Move]:
    """Moves after which the opponent mates in one."""
    out = []
    for move in board.legal_moves:
        board.push(move)
        if mates_in_one(board):
            out.append(move)
        board.pop()
    return out


# ---------------------------------------------------------------- making
def random_board(rng: random.Random, white: list[int], black: list[int], pawns: int) -> chess.Board | None:
    board = chess.Board(None)
    squares = rng.sample(range(64), 2 + len(white) + len(black) + pawns)
    board.set_piece_at(squares[0], chess.Piece(chess.KING, chess.WHITE))
    board.set_piece_at(squares[1], chess.Piece(chess.KING, chess.BLACK))
    at = 2
    for kind in white:
        board.set_piece_at(squares[at], chess.Piece(kind, chess.WHITE))
        at += 1
    for kind in black:
        board.set_piece_at(squares[at], chess.Piece(kind, chess.BLACK))
        at += 1
    for square in squares[at:]:
        if chess.square_rank(square) in (0, 7):
            return None
        board.set_piece_at(square, chess.Piece(chess.PAWN, chess.BLACK))
    board.turn = chess.WHITE
    if not board.is_valid() or board.is_check() or board.is_game_over():
        return None
    return board


def make(kind: str, rng: random.Random) -> tuple[chess.Board, dict] | None:
    if kind == "mate1":
        board = random_board(rng, [chess.QUEEN, chess.ROOK], [], rng.randint(0, 3))
        if board is None:
            return None
        mates = mates_in_one(board)
        return (board, {"bm": mates}) if 1 <= len(mates) <= 2 else None
    if kind == "mate2":
        board = random_board(rng, [chess.ROOK, chess.ROOK], [chess.KNIGHT], rng.randint(0, 2))
        if board is None or mates_in_one(board):
            return None
        mates = mates_in_two(board)
        return (board, {"bm": mates}) if 1 <= len(mates) <= 2 else None
    if kind == "capture":
        attacker = rng.choice([chess.KNIGHT, chess.BISHOP, chess.PAWN])
        board = random_board(rng, [attacker, chess.ROOK], [chess.QUEEN, chess.ROOK], rng.randint(0, 2))
        if board is None:
            return None
        values = move_values(board)
        best_value, best = values[0]
        if not (board.is_capture(best) and board.piece_type_at(best.to_square) == chess.QUEEN):
            return None
        if len(values) > 1 and best_value - values[1][0] < 3:
            return None
        return board, {"bm": [best], "c0": {best: 10}}
    if kind == "avoid":
        board = random_board(rng, [chess.ROOK], [chess.QUEEN, chess.ROOK], rng.randint(1, 3))
        if board is None:
            return None
        bad = allows_mate(board)
        return (board, {"am": bad}) if 1 <= len(bad) <= 3 and len(bad) < board.legal_moves.count() else None
    raise ValueError(kind)


def mirrored(board: chess.Board, ops: dict) -> tuple[chess.Board, dict]:
    def flip(m: chess.Move) -> chess.Move:
        return chess.Move(chess.square_mirror(m.from_square), chess.square_mirror(m.to_square), m.promotion)
    out = {}
    for key, value in ops.items():
        out[key] = {flip(m): p for m, p in value.items()} if isinstance(value, dict) else [flip(m) for m in value]
    return board.mirror(), out


def epd_line(board: chess.Board, ops: dict, ident: str) -> str:
    parts = [board.epd()]
    for key in ("bm", "am"):
        if key in ops:
            parts.append(f"{key} {' '.join(board.san(m) for m in ops[key])};")
    if "c0" in ops:
        parts.append('c0 "' + ", ".join(f"{board.san(m)}={p}" for m, p in ops["c0"].items()) + '";')
    parts.append(f'id "{ident}";')
    return " ".join(parts)


def generate() -> list[str]:
    rng = random.Random(SEED)
    lines = []
    for kind, count in PER_KIND.items():
        made = 0
        while made < count:
            found = make(kind, rng)
            if found is None:
                continue
            board, ops = found
            if made % 2:
                board, ops = mirrored(board, ops)
            made += 1
            lines.append(epd_line(board, ops, f"{kind}-{made:02d}"))
    return lines


# ---------------------------------------------------------------- checking
def check_line(line: str) -> str:
    """"" when the line's answer is proven, else what is wrong."""
    board = chess.Board()
    ops = board.set_epd(line)
    kind = str(ops.get("id", "")).split("-")[0]
    bm, am = set(ops.get("bm", [])), set(ops.get("am", []))
    if kind == "mate1" and bm != set(mates_in_one(board)):
        return "bm is not the set of mates in one"
    if kind == "mate2" and (mates_in_one(board) or bm != set(mates_in_two(board))):
        return "bm is not the set of mates in two"
    if kind == "capture":
        values = move_values(board)
        if {values[0][1]} != bm or (len(values) > 1 and values[0][0] - values[1][0] < 3):
            return "bm is not the clearly best capture"
    if kind == "avoid" and am != set(allows_mate(board)):
        return "am is not the set of moves that allow a mate in one"
    if kind not in ("mate1", "mate2", "capture", "avoid"):
        return f"unknown kind {kind!r}"
    return ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", metavar="FILE", help="prove FILE's answers instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        bad = 0
        for number, line in enumerate(pathlib.Path(args.check).read_text().splitlines(), start=1):
            if line.strip() and not line.startswith("#"):
                problem = check_line(line)
                if problem:
                    print(f"{args.check}:{number}: {problem}")
                    bad += 1
        return 1 if bad else 0
    header = ["# lc0-rocm tactics suite (MIT): made by scripts/make_tactics_suite.py from seed "
              f"{SEED}; every answer proven by python-chess."]
    TARGET.write_text("\n".join(header + generate()) + "\n")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
