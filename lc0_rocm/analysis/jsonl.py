"""JSONL lines straight from a plan and its columns: the bytes of
`json.dumps(record.to_dict(), separators=(",", ":"))` for every record
`writers.records` gives (tests hold the two equal), without a record, a
dict or an encoder call per position. A distinct row's part of the line
(mode .. outcome) is formatted once; each occurrence adds where it comes
from and its played move's loss. Writing a record the general way cost
~50 us a position on the project's VM: most of an eval-only run.
"""
from __future__ import annotations

import json
import math
import re
from typing import Iterator

from lc0_rocm.analysis import columns
from lc0_rocm.analysis.records import mark_of
from lc0_rocm.analysis.writers import DIGITS

# A string json.dumps writes as is between quotes: printable ASCII but " and \.
_PLAIN = re.compile(r'[ !#-\[\]-~]*')
_OUTCOMES = {1: '"checkmate"', 2: '"stalemate"'}


def _text(s: str | None) -> str:
    if s is None:
        return "null"
    return f'"{s}"' if _PLAIN.fullmatch(s) else json.dumps(s)


def _number(x: float) -> str:
    return float.__repr__(x) if math.isfinite(x) else json.dumps(x)


def lines(plan, cols: dict, mode: str) -> Iterator[str]:
    """The JSONL lines (without newlines) of the plan's occurrences in
    input order; none for an occurrence whose row the engine refused."""
    from lc0_rocm.search.score import score_cp
    rows = len(plan.rows)
    errors = cols["error"].tolist()
    wdl = cols["wdl"].tolist()
    q_col = cols["q"].tolist()
    moves_left_col = cols["moves_left"].tolist()
    cp_col, mate_col = cols["score_cp"].tolist(), cols["mate"].tolist()
    outcome_col, nodes_col = cols["outcome"].tolist(), cols["nodes"].tolist()
    best_col, pv_col = cols["best"].tolist(), cols["pv"].tolist()
    top_moves = cols["top_moves"].tolist() if mode == "eval" else None
    top_probs = cols["top_probs"].tolist() if mode == "eval" else None
    mode_text = _text(mode)
    fragments: list[str | None] = [None] * rows        # row t's part, once formatted
    expected: list[float] = [0.0] * rows                # its rounded win + draw / 2
    best_of: list[str | None] = [None] * rows

    def fragment(t: int) -> str:
        text = fragments[t]
        if text is not None:
            return text
        outcome = outcome_col[t]
        w, d, l = wdl[t]
        if outcome:
            cp, mate = None, None
        elif mode == "eval":
            cp, mate = score_cp(w - l, d, w - l), None
        else:
            cp = None if cp_col[t] == columns.NO_SCORE else cp_col[t]
            mate = mate_col[t] or None
        wr, dr, lr = round(w, DIGITS), round(d, DIGITS), round(l, DIGITS)
        expected[t] = wr + dr / 2
        moves_left = moves_left_col[t]
        best = best_col[t] or None
        best_of[t] = best
        pv = ",".join(_text(m) for m in pv_col[t].split())
        policy = ""
        if mode == "eval":
            policy = ",".join(f"[{_text(m)},{_number(round(p, DIGITS))}]"
                              for m, p in zip(top_moves[t], top_probs[t]) if m)
        text = (f'"mode":{mode_text},"wdl":[{_number(wr)},{_number(dr)},{_number(lr)}],'
                f'"q":{_number(round(q_col[t], DIGITS))},'
                f'"score_cp":{"null" if cp is None else cp},"mate":{"null" if mate is None else mate},'
                f'"moves_left":{"null" if math.isnan(moves_left) else _number(round(moves_left, DIGITS))},'
                f'"best":{_text(best)},"pv":[{pv}],"policy":[{policy}],"nodes":{nodes_col[t]},'
                f'"outcome":{_OUTCOMES.get(outcome, "null")}')
        fragments[t] = text
        return text

    positions, tasks = plan.positions, plan.tasks
    sources: dict[str, str] = {}
    count = len(positions)
    for i in range(count):
        p, t = positions[i], tasks[i]
        if errors[t]:
            continue
        row = fragment(t)
        loss = mark = None
        if p.played is not None and i + 1 < count:
            after = positions[i + 1]
            if (after.game is not None and after.source == p.source and after.game == p.game
                    and after.ply == p.ply + 1 and not errors[tasks[i + 1]]):
                fragment(tasks[i + 1])
                loss = max(0.0, round(expected[t] - (1.0 - expected[tasks[i + 1]]), 6))
                mark = mark_of(loss, p.played, best_of[t])
        source = sources.get(p.source)
        if source is None:
            source = sources[p.source] = _text(p.source)
        yield (f'{{"source":{source},"line":{p.line},"game":{"null" if p.game is None else p.game},'
               f'"ply":{p.ply},"fen":{_text(p.fen)},{row},"id":{_text(p.id)},"played":{_text(p.played)},'
               f'"played_loss":{"null" if loss is None else _number(loss)},"mark":{_text(mark)}}}')
