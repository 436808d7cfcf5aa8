"""A shard's results as columns (numpy arrays, one row per distinct
position), the form workers return, shard files hold and writers read.

    error      U   why the engine refused the row ("" when it did not)
    outcome    i1  0, 1 checkmate, 2 stalemate (no legal move: not evaluated)
    wdl        f8  (n, 3) win, draw, loss of the side to move
    q          f8  win - loss (the search's best move's, or the network's)
    moves_left f4  plies, NaN without a moves-left head
    score_cp   i4  centipawns (search: lc0's info line; NO_SCORE for eval,
                   whose score the writers derive from wdl)
    mate       i4  moves to mate, 0 when none
    best       U   UCI, "" when none
    pv         U   UCI moves separated by spaces
    nodes      i8  visits searched
    top_moves  U5  (n, k) the policy's most probable moves ("" past the legal ones)
    top_probs  f4  (n, k) their probabilities
"""
from __future__ import annotations

import numpy as np

NO_SCORE = np.iinfo(np.int32).min
NAMES = ("error", "outcome", "wdl", "q", "moves_left", "score_cp", "mate", "best", "pv", "nodes",
         "top_moves", "top_probs")
EXACT_WDL = {1: (0.0, 0.0, 1.0), 2: (0.0, 1.0, 0.0)}   # checkmate, stalemate


def empty(n: int, mode: str, top_k: int) -> dict[str, np.ndarray]:
    k = top_k if mode == "eval" else 0
    return {
        "error": np.full(n, "", dtype="U1"),
        "outcome": np.zeros(n, dtype=np.int8),
        "wdl": np.zeros((n, 3), dtype=np.float64),
        "q": np.zeros(n, dtype=np.float64),
        "moves_left": np.full(n, np.nan, dtype=np.float32),
        "score_cp": np.full(n, NO_SCORE, dtype=np.int32),
        "mate": np.zeros(n, dtype=np.int32),
        "best": np.full(n, "", dtype="U5"),
        "pv": np.full(n, "", dtype="U1"),
        "nodes": np.zeros(n, dtype=np.int64),
        "top_moves": np.full((n, k), "", dtype="U5"),
        "top_probs": np.zeros((n, k), dtype=np.float32),
    }


def fill_eval(out: dict, rows, failed: np.ndarray, wdl: np.ndarray, moves_left: np.ndarray,
              has_moves_left: bool, names: np.ndarray, probs: np.ndarray, no_moves: np.ndarray,
              in_check: np.ndarray) -> None:
    """The network's outputs for `rows` (a slice or an index array;
    vectorised: no Python per row)."""
    w = np.asarray(wdl, dtype=np.float64)
    outcome = np.where(no_moves, np.where(in_check, 1, 2), 0).astype(np.int8)
    for code, exact in EXACT_WDL.items():
        w = np.where((outcome == code)[:, None], np.asarray(exact), w)
    out["outcome"][rows] = np.where(failed, 0, outcome)
    out["wdl"][rows] = w
    out["q"][rows] = w[:, 0] - w[:, 2]
    if has_moves_left:
        out["moves_left"][rows] = np.where(no_moves, 0.0, moves_left)
    out["top_moves"][rows] = names
    out["top_probs"][rows] = probs
    best = names[:, 0] if names.shape[1] else np.full(len(w), "", dtype="U5")
    out["best"][rows] = best
    out["pv"] = _fit(out["pv"], best)
    out["pv"][rows] = best
    if failed.any():
        out["error"] = _fit(out["error"], np.array(["refused by the engine"]))
        out["error"][rows] = np.where(failed, "refused by the engine", out["error"][rows])


def set_row(out: dict, i: int, **values) -> None:
    """One row's values (search results), widening string columns as needed."""
    for name, value in values.items():
        column = out[name]
        if column.dtype.kind == "U":
            out[name] = column = _fit(column, np.array([value]))
        column[i] = value


def _fit(column: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`column` widened to hold `values`' strings."""
    if values.dtype.kind == "U" and values.dtype.itemsize > column.dtype.itemsize:
        return column.astype(np.dtype(("U", values.dtype.itemsize // 4)))
    return column


def concatenate(parts: list[dict]) -> dict[str, np.ndarray]:
    if not parts:
        raise ValueError("no parts")
    return {name: np.concatenate([p[name] for p in parts]) for name in NAMES}


def place(full: dict, part: dict, rows: slice) -> None:
    """Copy a shard's columns into rows of the whole run's."""
    for name in NAMES:
        full[name] = _fit(full[name], part[name])
        full[name][rows] = part[name]
