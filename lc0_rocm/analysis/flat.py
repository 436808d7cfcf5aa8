"""What the records of a run hold, as flat lists straight from its plan and
columns, for the JSONL, Parquet and PGN writers: a distinct row's values
once (rounded as records.py's AnalysisRecord holds them) and each
occurrence's row and played-move loss, without a record per position
(writing a record the general way cost ~50 us a position on the project's
VM: most of an eval-only run). writers.records stays the reference (tests
hold them equal).

The occurrences come in chunks of CHUNK, each with the values of only the
rows it names: a row's values as Python objects take ~1 KB, so holding
every row's at once doubled a big run's memory.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.records import loss_between, mark_of

DIGITS = 6
CHUNK = 32768     # occurrences a chunk
OUTCOMES = {1: "checkmate", 2: "stalemate"}


@dataclasses.dataclass
class RowValues:
    """Per distinct row (index t): AnalysisRecord's fields from mode to outcome."""
    wdl: list          # (w, d, l) rounded
    q: list
    score_cp: list     # int or None
    mate: list         # int or None
    moves_left: list   # float or None
    best: list         # UCI or None
    pv: list           # [UCI]
    policy: list       # [(UCI, p)]
    nodes: list
    outcome: list      # "checkmate", "stalemate" or None
    expected: list     # rounded win + draw / 2 (the played-move loss's terms)


def row_fields(mode: str, outcome: int, w: float, d: float, l: float, q: float, moves_left: float,
               cp: int, mate: int, best: str, pv: str, names, probs) -> tuple:
    """One row's AnalysisRecord fields from its column values: (wdl
    rounded, q, score_cp, mate, moves_left, best, pv, policy, outcome)."""
    from lc0_rocm.search.score import score_cp
    if outcome:
        cp_value, mate_value = None, None
    elif mode == "eval":
        cp_value, mate_value = score_cp(w - l, d, w - l), None   # lc0's `score cp` of the network's value
    else:
        cp_value = None if cp == columns.NO_SCORE else cp
        mate_value = mate or None
    policy = [(m, round(p, DIGITS)) for m, p in zip(names, probs) if m] if mode == "eval" else []
    return ((round(w, DIGITS), round(d, DIGITS), round(l, DIGITS)), round(q, DIGITS), cp_value, mate_value,
            None if moves_left != moves_left else round(moves_left, DIGITS), best or None, pv.split(), policy,
            OUTCOMES.get(outcome))


def row_values(cols: dict, mode: str, rows=slice(None)) -> RowValues:
    """The values of `rows` (an index array; default all), in that order."""
    names = ("wdl", "q", "score_cp", "mate", "moves_left", "best", "pv", "policy", "outcome")
    lists = {name: [] for name in names}
    eval_mode = mode == "eval"
    top_moves = cols["top_moves"][rows].tolist() if eval_mode else None
    top_probs = cols["top_probs"][rows].tolist() if eval_mode else None
    for t, (outcome, (w, d, l), q, moves_left, cp, mate, best, pv) in enumerate(zip(
            *(cols[name][rows].tolist() for name in ("outcome", "wdl", "q", "moves_left", "score_cp", "mate",
                                                     "best", "pv")))):
        fields = row_fields(mode, outcome, w, d, l, q, moves_left, cp, mate, best, pv,
                            top_moves[t] if eval_mode else (), top_probs[t] if eval_mode else ())
        for name, value in zip(names, fields):
            lists[name].append(value)
    expected = [w + d / 2 for w, d, _ in lists["wdl"]]
    return RowValues(nodes=cols["nodes"][rows].tolist(), expected=expected, **lists)


def is_next(a, b) -> bool:
    """Is occurrence b the position after a's played move?"""
    return (b is not None and a.played is not None and b.game is not None and b.source == a.source
            and b.game == a.game and b.ply == a.ply + 1)


def chunks(plan, cols: dict, mode: str,
           size: int | None = None) -> Iterator[tuple[RowValues, list[tuple[int, int, float | None, str | None]]]]:
    """The occurrences in input order whose row the engine did not refuse
    (writers.records' rules), `size` (CHUNK) input positions at a time:
    (the values of the rows the chunk names, its occurrences as
    (occurrence, index into those values, played_loss, mark))."""
    size = size or CHUNK
    failed = (cols["error"] != "").tolist()
    positions, tasks = plan.positions, plan.tasks
    count = len(positions)
    for start in range(0, count, size):
        stop = min(count, start + size)
        named = np.unique(np.asarray(tasks[start:min(count, stop + 1)], dtype=np.int64))  # the next one's too: losses
        values = row_values(cols, mode, named)
        local = dict(zip(named.tolist(), range(len(named))))
        out = []
        for i in range(start, stop):
            p, t = positions[i], tasks[i]
            if failed[t]:
                continue
            k = local[t]
            loss = mark = None
            if i + 1 < count and is_next(p, positions[i + 1]) and not failed[tasks[i + 1]]:
                loss = loss_between(values.expected[k], values.expected[local[tasks[i + 1]]])
                mark = mark_of(loss, p.played, values.best[k])
            out.append((i, k, loss, mark))
        yield values, out
