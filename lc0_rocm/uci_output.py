"""The UCI engine's output: `info` lines in lc0's order and units,
VerboseMoveStats lines, and the LogFile of every line in and out."""
from __future__ import annotations

import math
import sys
import threading
import time

import chess

from lc0_rocm.search import score as search_score
from lc0_rocm.uci_parse import UciError, echo

# ------------------------------------------------------------------ output

def wdl_permille(wdl) -> tuple[int, int, int] | None:
    """(w, d, l) as lc0 prints it: permille ints that add up to 1000.
    Accepts probabilities (floats in [0, 1]) or permille numbers."""
    if wdl is None:
        return None
    w, d, l = (float(x) for x in wdl)
    if max(w, d, l) <= 1.0 + 1e-6 and (w + d + l) <= 1.5:
        wl, dd = w - l, d
    else:
        wl, dd = (w - l) / 1000.0, d / 1000.0
    return search_score.wdl_permille(wl, dd)


def centipawns(q: float) -> int:
    """lc0's centipawn conversion, used only when the search gives no score."""
    q = max(-1.0, min(1.0, float(q)))
    return int(45 * math.tan(1.56728071628 * q))


def format_info(info, *, show_wdl: bool, show_moves_left: bool, multipv: bool,
                extra_tbhits: int = 0) -> str:
    """One `info` line in lc0's order from a SearchInfo."""
    parts = ["info"]
    depth = getattr(info, "depth", None)
    if depth is not None:
        parts += ["depth", str(max(int(depth), 1))]
    for key, attr in (("seldepth", "seldepth"), ("time", "time_ms"), ("nodes", "nodes")):
        value = getattr(info, attr, None)
        if value is not None:
            parts += [key, str(int(value))]
    mate = getattr(info, "mate", None)
    score_cp = getattr(info, "score_cp", None)
    if mate is not None:
        parts += ["score", "mate", str(int(mate))]
    elif score_cp is not None:
        parts += ["score", "cp", str(int(score_cp))]
    elif getattr(info, "q", None) is not None:
        parts += ["score", "cp", str(centipawns(info.q))]
    if show_wdl:
        wdl = getattr(info, "wdl_permille", None) or wdl_permille(getattr(info, "wdl", None))
        if wdl is not None:
            parts += ["wdl", *map(str, wdl)]
    moves_left = getattr(info, "moves_left", None)
    if show_moves_left and moves_left is not None:
        parts += ["movesleft", str(int(moves_left))]
    nps = getattr(info, "nps", None)
    if nps is not None:
        parts += ["nps", str(int(nps))]
    parts += ["tbhits", str(int(getattr(info, "tbhits", None) or 0) + extra_tbhits)]
    if multipv and getattr(info, "multipv", None) is not None:
        parts += ["multipv", str(int(info.multipv))]
    pv = list(getattr(info, "pv", None) or [])
    if not pv and getattr(info, "move", None) is not None:
        pv = [info.move]
    if pv:
        parts += ["pv", *(m.uci() for m in pv)]
    return " ".join(parts)


def nn_index(board: chess.Board, move: chess.Move) -> int:
    """lc0's policy index of a root move (side-to-move frame, castling as
    king takes rook), as VerboseMoveStats prints it; -1 if it has none."""
    from lc0_rocm import tables
    from_sq, to_sq = move.from_square, move.to_square
    if board.is_castling(move) and not board.chess960:
        to_sq = chess.square(7 if chess.square_file(to_sq) > chess.square_file(from_sq) else 0,
                             chess.square_rank(to_sq))
    if board.turn == chess.BLACK:
        from_sq, to_sq = chess.square_mirror(from_sq), chess.square_mirror(to_sq)
    promotion = chess.piece_symbol(move.promotion) if move.promotion else ""
    try:
        return tables.move_index(chess.square_name(from_sq) + chess.square_name(to_sq) + promotion)
    except ValueError:
        return -1


def verbose_move_stats(result, board: chess.Board) -> list[str]:
    """`info string` lines per root move, fewest visits first, in lc0's
    VerboseMoveStats layout (N, in-flight, P, WL, D, M, Q; lc0's U, S and V
    columns need search internals and are left out), then the root."""
    stats = getattr(result, "stats", None) or {}
    rows = sorted(stats.items(), key=lambda kv: (getattr(kv[1], "visits", 0) or 0,
                                                 getattr(kv[1], "p", 0.0) or 0.0))
    lines = []
    visited_policy = 0.0
    for move, s in rows:
        visits = int(getattr(s, "visits", 0) or 0)
        in_flight = int(getattr(s, "n_in_flight", 0) or 0)
        p = float(getattr(s, "p", 0.0) or 0.0)
        wdl = getattr(s, "wdl", None)
        q = getattr(s, "q", None)
        m = getattr(s, "moves_left", None)
        if visits > 0:
            visited_policy += p
        line = (f"info string {move.uci():<5} ({nn_index(board, move):<4}) N: {visits:7d} "
                f"(+{in_flight:2d}) (P: {p * 100:5.2f}%) ")
        if visits > 0 and wdl is not None:
            w, d, l = (float(x) for x in wdl)
            line += f"(WL: {w - l:8.5f}) (D: {d:5.3f}) "
        else:
            line += "(WL:  -.-----) (D: -.---) "
        line += f"(M: {float(m):4.1f}) " if (m is not None and visits > 0) else "(M:  -.-) "
        line += f"(Q: {float(q):8.5f})" if (q is not None and visits > 0) else "(Q:  -.-----)"
        lines.append(line)
    total = int(getattr(result, "nodes", 0) or 0)
    q = getattr(result, "q", None)
    lines.append(f"info string node  ({len(stats):4d}) N: {total:7d} (+ 0) (P: {visited_policy * 100:5.2f}%)"
                 + (f" (Q: {float(q):8.5f})" if q is not None else ""))
    return lines


# ------------------------------------------------------------------ logging

class IoLog:
    """LogFile: every line in (>>) and out (<<), with a timestamp."""

    def __init__(self):
        self._file = None
        self._name = ""
        self._lock = threading.Lock()

    def open(self, name: str) -> None:
        with self._lock:
            if name == self._name:
                return
            if self._file not in (None, sys.stderr):
                try:
                    self._file.close()
                except OSError:
                    pass   # its last lines are lost (a full disk); the file is closed all the same
            self._file, self._name = None, name
            if name == "<stderr>":
                self._file = sys.stderr
            elif name:
                try:
                    self._file = open(name, "a", encoding="utf-8")
                except (OSError, ValueError) as e:   # ValueError: a NUL in the name
                    self._name = ""
                    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                    raise UciError(f"LogFile: cannot open {echo(name)}: {reason}") from None

    def write(self, direction: str, line: str) -> None:
        with self._lock:
            if self._file is None:
                return
            now = time.time()   # read once: seconds and their fraction from the same instant
            stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
            micros = min(int((now % 1) * 1e6), 999999)
            try:
                self._file.write(f"{stamp}.{micros:06d} {direction} {line}\n")
                self._file.flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        try:
            self.open("")
        except UciError:
            pass
