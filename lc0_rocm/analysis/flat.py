"""What the records of a run hold, as flat lists straight from its plan and
columns, for the JSONL and Parquet writers: a distinct row's values once
(rounded as records.py's AnalysisRecord holds them) and each occurrence's
row and played-move loss, without a record per position (writing a record
the general way cost ~50 us a position on the project's VM: most of an
eval-only run). writers.records stays the reference (tests hold them
equal).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.records import loss_between, mark_of

DIGITS = 6
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


def row_values(cols: dict, mode: str) -> RowValues:
    names = ("wdl", "q", "score_cp", "mate", "moves_left", "best", "pv", "policy", "outcome")
    lists = {name: [] for name in names}
    eval_mode = mode == "eval"
    top_moves = cols["top_moves"].tolist() if eval_mode else None
    top_probs = cols["top_probs"].tolist() if eval_mode else None
    for t, (outcome, (w, d, l), q, moves_left, cp, mate, best, pv) in enumerate(zip(
            cols["outcome"].tolist(), cols["wdl"].tolist(), cols["q"].tolist(), cols["moves_left"].tolist(),
            cols["score_cp"].tolist(), cols["mate"].tolist(), cols["best"].tolist(), cols["pv"].tolist())):
        fields = row_fields(mode, outcome, w, d, l, q, moves_left, cp, mate, best, pv,
                            top_moves[t] if eval_mode else (), top_probs[t] if eval_mode else ())
        for name, value in zip(names, fields):
            lists[name].append(value)
    expected = [w + d / 2 for w, d, _ in lists["wdl"]]
    return RowValues(nodes=cols["nodes"].tolist(), expected=expected, **lists)


def is_next(a, b) -> bool:
    """Is occurrence b the position after a's played move?"""
    return (b is not None and a.played is not None and b.game is not None and b.source == a.source
            and b.game == a.game and b.ply == a.ply + 1)


def occurrences(plan, cols: dict, values: RowValues) -> Iterator[tuple[int, int, float | None, str | None]]:
    """(occurrence, row, played_loss, mark) of each occurrence in input order
    whose row the engine did not refuse (writers.records' rules)."""
    errors = cols["error"].tolist()
    positions, tasks = plan.positions, plan.tasks
    count = len(positions)
    for i in range(count):
        p, t = positions[i], tasks[i]
        if errors[t]:
            continue
        loss = mark = None
        if i + 1 < count and is_next(p, positions[i + 1]) and not errors[tasks[i + 1]]:
            loss = loss_between(values.expected[t], values.expected[tasks[i + 1]])
            mark = mark_of(loss, p.played, values.best[t])
        yield i, t, loss, mark
