"""What the records of a run hold, straight from its plan and columns, for
the JSONL, Parquet and PGN writers: a distinct row's values
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

from typing import Iterator, NamedTuple

import numpy as np

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.records import loss_between, mark_of

DIGITS = 6
CHUNK = 32768     # input positions a chunk
OUTCOMES = {1: "checkmate", 2: "stalemate"}


class RowValues(NamedTuple):
    """A distinct row's AnalysisRecord fields from mode to outcome."""
    wdl: tuple         # (w, d, l) rounded
    q: float
    score_cp: int | None
    mate: int | None
    moves_left: float | None
    best: str | None   # UCI
    pv: list           # [UCI]
    policy: list       # [(UCI, p)]
    nodes: int
    outcome: str | None    # "checkmate", "stalemate"
    expected: float    # rounded win + draw / 2 (the played-move loss's terms)


def row_fields(mode: str, outcome: int, w: float, d: float, l: float, q: float, moves_left: float,
               cp: int, mate: int, best: str, pv: str, names, probs, network_cp: int | None = None) -> tuple:
    """One row's AnalysisRecord fields from its column values: (wdl
    rounded, q, score_cp, mate, moves_left, best, pv, policy, outcome).
    Eval mode's score is lc0's `score cp` of the network's value
    (`network_cp` when the caller computed it, as score.network_score_cp)."""
    from lc0_rocm.search.score import score_cp
    if outcome:
        cp_value, mate_value = None, None
    elif mode == "eval":
        cp_value, mate_value = network_cp if network_cp is not None else score_cp(w - l, d, w - l), None
    else:
        cp_value = None if cp == columns.NO_SCORE else cp
        mate_value = mate or None
    policy = [(m, round(p, DIGITS)) for m, p in zip(names, probs) if m] if mode == "eval" else []
    return ((round(w, DIGITS), round(d, DIGITS), round(l, DIGITS)), round(q, DIGITS), cp_value, mate_value,
            None if moves_left != moves_left else round(moves_left, DIGITS), best or None, pv.split(), policy,
            OUTCOMES.get(outcome))


def row_values(cols: dict, mode: str, rows: list[int]) -> dict[int, RowValues]:
    """The values of rows `rows` (row indices), by row."""
    if not rows:
        return {}
    index = np.asarray(rows, dtype=np.int64)
    eval_mode = mode == "eval"
    top_moves = cols["top_moves"][index].tolist() if eval_mode else None
    top_probs = cols["top_probs"][index].tolist() if eval_mode else None
    if eval_mode:
        from lc0_rocm.search.score import network_score_cp
        wdl = cols["wdl"][index]
        network_cps = network_score_cp(wdl[:, 0] - wdl[:, 2], wdl[:, 1])
    out = {}
    for j, (t, outcome, (w, d, l), q, moves_left, cp, mate, best, pv, nodes) in enumerate(zip(
            rows, *(cols[name][index].tolist() for name in ("outcome", "wdl", "q", "moves_left", "score_cp",
                                                            "mate", "best", "pv", "nodes")))):
        fields = row_fields(mode, outcome, w, d, l, q, moves_left, cp, mate, best, pv,
                            top_moves[j] if eval_mode else (), top_probs[j] if eval_mode else (),
                            network_cps[j] if eval_mode else None)
        rounded = fields[0]
        out[t] = RowValues(*fields[:8], nodes, fields[8], rounded[0] + rounded[1] / 2)
    return out


def is_next(a, b) -> bool:
    """Is occurrence b the position after a's played move?"""
    return (b is not None and a.played is not None and b.game is not None and b.source == a.source
            and b.game == a.game and b.ply == a.ply + 1)


def chunks(plan, cols: dict, mode: str, size: int | None = None,
           until: int | None = None) -> Iterator[tuple[dict[int, RowValues], list[tuple]]]:
    """The occurrences in input order whose row the engine did not refuse
    (writers.records' rules), `size` (CHUNK) input positions at a time:
    (the values of the rows the chunk names, by row; its occurrences as
    (Position, row, played_loss, mark)). A row the chunk before named
    keeps its values (a database's openings recur in every chunk).
    `until`: only positions before it (the one at it still gives the last
    one's loss)."""
    size = size or CHUNK
    failed = (cols["error"] != "").tolist()
    tasks = plan.tasks
    count = len(tasks)
    last = count if until is None else min(count, until)
    values: dict[int, RowValues] = {}
    for start in range(0, last, size):
        stop = min(last, start + size)
        end = min(count, stop + 1)                 # the next position too: its value makes a loss
        named = np.unique(np.asarray(tasks[start:end], dtype=np.int64)).tolist()
        kept = {t: values[t] for t in named if t in values}
        kept.update(row_values(cols, mode, [t for t in named if t not in kept]))
        values = kept
        positions = plan.positions[start:end]
        out = []
        for j in range(stop - start):
            p, t = positions[j], tasks[start + j]
            if failed[t]:
                continue
            loss = mark = None
            if j + 1 < len(positions) and is_next(p, positions[j + 1]) and not failed[tasks[start + j + 1]]:
                loss = loss_between(values[t].expected, values[tasks[start + j + 1]].expected)
                mark = mark_of(loss, p.played, values[t].best)
            out.append((p, t, loss, mark))
        yield values, out
