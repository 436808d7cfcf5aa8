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
from lc0_rocm.analysis.records import mark_of

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


def row_values(cols: dict, mode: str) -> RowValues:
    from lc0_rocm.search.score import score_cp
    wdl_col, q_col = cols["wdl"].tolist(), cols["q"].tolist()
    moves_left_col = cols["moves_left"].tolist()
    cp_col, mate_col = cols["score_cp"].tolist(), cols["mate"].tolist()
    outcome_col = cols["outcome"].tolist()
    top_moves = cols["top_moves"].tolist() if mode == "eval" else None
    top_probs = cols["top_probs"].tolist() if mode == "eval" else None
    out = RowValues([], [], [], [], [], [], [], [], cols["nodes"].tolist(), [], [])
    for t, (w, d, l) in enumerate(wdl_col):
        outcome = outcome_col[t]
        if outcome:
            cp, mate = None, None
        elif mode == "eval":
            cp, mate = score_cp(w - l, d, w - l), None      # lc0's `score cp` of the network's value
        else:
            cp = None if cp_col[t] == columns.NO_SCORE else cp_col[t]
            mate = mate_col[t] or None
        rounded = (round(w, DIGITS), round(d, DIGITS), round(l, DIGITS))
        out.wdl.append(rounded)
        out.expected.append(rounded[0] + rounded[1] / 2)
        out.q.append(round(q_col[t], DIGITS))
        out.score_cp.append(cp)
        out.mate.append(mate)
        moves_left = moves_left_col[t]
        out.moves_left.append(None if moves_left != moves_left else round(moves_left, DIGITS))
        out.outcome.append(OUTCOMES.get(outcome))
        if mode == "eval":
            out.policy.append([(m, round(p, DIGITS)) for m, p in zip(top_moves[t], top_probs[t]) if m])
        else:
            out.policy.append([])
    out.best = [b or None for b in cols["best"].tolist()]
    out.pv = [text.split() for text in cols["pv"].tolist()]
    return out


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
        if p.played is not None and i + 1 < count:
            after, u = positions[i + 1], tasks[i + 1]
            if (after.game is not None and after.source == p.source and after.game == p.game
                    and after.ply == p.ply + 1 and not errors[u]):
                loss = max(0.0, round(values.expected[t] - (1.0 - values.expected[u]), 6))
                mark = mark_of(loss, p.played, values.best[t])
        yield i, t, loss, mark
