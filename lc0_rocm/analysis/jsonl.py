"""JSONL lines straight from a plan and its columns (analysis.flat): the
bytes of `json.dumps(record.to_dict(), separators=(",", ":"))` for every
record `writers.records` gives (tests hold the two equal). A distinct
row's part of the line (mode .. outcome) is formatted once a chunk; each
occurrence adds where it comes from and its played move's loss. A big
run's lines are made on every core (`write`).
"""
from __future__ import annotations

import json
import math
import re
import pickle
import shutil
import sys
import tempfile
from typing import Iterator

from lc0_rocm.analysis import flat, position_parts

# A string json.dumps writes as is between quotes: printable ASCII but " and \.
_PLAIN = re.compile(r'[ !#-\[\]-~]*')


def _text(s: str | None) -> str:
    if s is None:
        return "null"
    return f'"{s}"' if _PLAIN.fullmatch(s) else json.dumps(s)


def _number(x: float | None) -> str:
    if x is None:
        return "null"
    return float.__repr__(x) if math.isfinite(x) else json.dumps(x)


def _int(x: int | None) -> str:
    return "null" if x is None else str(x)


def lines(plan, cols: dict, mode: str, until: int | None = None) -> Iterator[str]:
    """The JSONL lines (without newlines) of the plan's occurrences in
    input order (those before `until`); none for an occurrence whose row
    the engine refused."""
    mode_text = _text(mode)

    def fragment(v: flat.RowValues) -> str:
        """A row's part of the line, from mode to outcome."""
        w, d, l = v.wdl
        pv = ",".join(_text(m) for m in v.pv)
        policy = ",".join(f"[{_text(m)},{_number(p)}]" for m, p in v.policy)
        return (f'"mode":{mode_text},"wdl":[{_number(w)},{_number(d)},{_number(l)}],"q":{_number(v.q)},'
                f'"score_cp":{_int(v.score_cp)},"mate":{_int(v.mate)},'
                f'"moves_left":{_number(v.moves_left)},"best":{_text(v.best)},"pv":[{pv}],'
                f'"policy":[{policy}],"nodes":{v.nodes},"outcome":{_text(v.outcome)}')

    sources: dict[str, str] = {}
    fragments: dict[int, str] = {}
    for values, occurrences in flat.chunks(plan, cols, mode, until=until):
        fragments = {t: fragments[t] for t in values if t in fragments}   # the rows this chunk names
        for p, t, loss, mark in occurrences:
            row = fragments.get(t)
            if row is None:
                row = fragments[t] = fragment(values[t])
            source = sources.get(p.source)
            if source is None:
                source = sources[p.source] = _text(p.source)
            yield (f'{{"source":{source},"line":{p.line},"game":{_int(p.game)},"ply":{p.ply},'
                   f'"fen":{_text(p.fen)},{row},"id":{_text(p.id)},"played":{_text(p.played)},'
                   f'"played_loss":{_number(loss)},"mark":{_text(mark)}}}')


def write(f, plan, cols: dict, mode: str, scratch: str | None = None) -> int:
    """The lines into the text file f; returns how many. A big run's
    lines are made on every core, a part of the positions per process
    (position_parts, `python -m` this module), each into a temporary file
    in `scratch`, copied into f in order: the same bytes as one process,
    which is also what happens when a part's process fails."""
    parts = position_parts.count(plan)
    if parts >= 2:
        total = len(plan.tasks)
        cuts = [total * k // parts for k in range(parts + 1)]
        with tempfile.TemporaryDirectory(prefix=".lc0-rocm-jsonl-", dir=scratch) as folder:
            done = position_parts.run("lc0_rocm.analysis.jsonl", plan, cols, cuts, (mode,), folder, ".jsonl")
            if done is not None:
                outs, counts = done
                for out in outs:
                    with open(out, encoding="utf-8", newline="") as part:
                        shutil.copyfileobj(part, f)
                return sum(counts)
    return _write_lines(f, lines(plan, cols, mode))


def _write_lines(f, texts: Iterator[str]) -> int:
    count = 0
    write = f.write
    for line in texts:
        write(line)
        write("\n")
        count += 1
    return count


def main() -> int:
    """A part's process: (plan, columns, mode, until, out) pickled on
    stdin -> its lines in OUT, their count pickled on stdout."""
    plan, cols, mode, until, out = pickle.loads(sys.stdin.buffer.read())
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        count = _write_lines(f, lines(plan, cols, mode, until))
    sys.stdout.buffer.write(pickle.dumps(count, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
