"""Syzygy tablebases: loading (UCI's SyzygyPath), the most pieces a set
covers (the searches probe inside the tree up to it) and root probing.

Root probing, as lc0 does at the root: when the root position is in the
tablebases, only the moves that keep the best tablebase result are searched.
Results are ranked by python-chess's WDL values from the mover's side
(2 win, 1 win spoiled by the 50-move rule, 0 draw, -1 loss saved by the
50-move rule, -2 loss). DTZ is not used (lc0 prefers DTZ when the files are
there); a checkmating move ranks as a win.
"""
from __future__ import annotations

import os

import chess
import chess.syzygy

from lc0_rocm.errors import Lc0RocmError


class SyzygyError(Lc0RocmError):
    """A SyzygyPath that cannot be used."""


def open_tablebases(paths: str):
    """A python-chess Tablebase over the folders in `paths` (separated by
    os.pathsep, like lc0), or None for an empty string."""
    folders = [p.strip() for p in paths.split(os.pathsep) if p.strip()]
    if not folders:
        return None
    missing = [f for f in folders if not os.path.isdir(f)]
    if missing:
        raise SyzygyError(f"SyzygyPath: not a folder: {', '.join(missing)}")
    tablebase = chess.syzygy.Tablebase()
    try:
        found = sum(tablebase.add_directory(f) for f in folders)
    except OSError as e:   # a folder we may not read, ...
        tablebase.close()
        raise SyzygyError(f"SyzygyPath: cannot read {e.filename or ', '.join(folders)}: "
                          f"{e.strerror or e}") from None
    if found == 0:
        tablebase.close()
        raise SyzygyError(f"SyzygyPath: no Syzygy tables (*.rtbw) in {', '.join(folders)}")
    return tablebase


def max_pieces(tablebase) -> int:
    """Most pieces (kings included) of any loaded WDL table: a prober's own
    `max_pieces` when it has one, else read off python-chess's table names;
    7 when the object does not say."""
    given = getattr(tablebase, "max_pieces", None)
    if given is not None:
        return int(given)
    names = getattr(tablebase, "wdl", None)
    if not names:
        return 7
    return max(len(name) - 1 for name in names)  # "KQvK" -> 3 pieces


def root_moves(tablebase, board: chess.Board, candidates=None):
    """(moves that keep the best result, number of probes) for `board`, or
    (None, probes) when the position is not in the tablebases. `candidates`
    restricts the moves looked at (UCI searchmoves)."""
    if tablebase is None or board.has_castling_rights(chess.WHITE) or board.has_castling_rights(chess.BLACK):
        return None, 0
    if chess.popcount(board.occupied) > max_pieces(tablebase):
        return None, 0
    probes = 0
    ranked = []
    moves = list(board.legal_moves) if candidates is None else list(candidates)
    for move in moves:
        board.push(move)
        try:
            if board.is_checkmate():
                value = 2
            elif board.is_stalemate() or board.is_insufficient_material():
                value = 0
            else:
                probes += 1
                value = -tablebase.probe_wdl(board)
        except KeyError:  # missing table (or a position python-chess cannot probe)
            return None, probes
        finally:
            board.pop()
        ranked.append((value, move))
    if not ranked:
        return None, probes
    best = max(value for value, _ in ranked)
    return [move for value, move in ranked if value == best], probes
