"""Records from a plan and its computed columns, and the output files:
JSONL (one record per line), Parquet (optional `pyarrow`), annotated PGN
(lichess's `[%eval ...]` comments and ?! ? ?? marks: pgn_out.py) and the
errors file.

Each file is written to a temporary name beside its target and renamed
once complete. Numbers are rounded to 6 decimals, so the same results
give the same bytes.
"""
from __future__ import annotations

import contextlib
import functools
import os
import pathlib
import tempfile
from typing import Iterator

import numpy as np

from lc0_rocm.analysis import flat, parquet_parts
from lc0_rocm.analysis.records import AnalysisRecord, mark_of, played_loss
from lc0_rocm.analysis.settings import AnalysisError

PARQUET_BATCH = 65536


# An output's format by the end of its name.
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet", ".pgn": "pgn"}
COMPRESSED = (".gz", ".bz2", ".xz", ".zst")


def format_of(path: str) -> str:
    """The output format `path` names; AnalysisError for a name that names
    none (`out.txt`, `games.pgn.gz`), rather than JSON lines in a file whose
    name promises something else."""
    suffix = os.path.splitext(path.lower())[1]
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    hint = (" (outputs are written uncompressed: compress the file afterwards)" if suffix in COMPRESSED else
            " (the records are JSON lines, one a line, not one JSON document)" if suffix == ".json" else "")
    raise AnalysisError(f"output {path}: end its name with .jsonl (JSON lines), .parquet or .pgn{hint}")


# ---------------------------------------------------------------- records
def record_of(position, cols: dict, t: int, mode: str) -> AnalysisRecord:
    """The record of one occurrence from row t of the columns."""
    w, d, l = cols["wdl"][t].tolist()
    names, probs = (cols["top_moves"][t].tolist(), cols["top_probs"][t].tolist()) if mode == "eval" else ((), ())
    wdl, q, cp, mate, moves_left, best, pv, policy, outcome = flat.row_fields(
        mode, int(cols["outcome"][t]), w, d, l, float(cols["q"][t]), float(cols["moves_left"][t]),
        int(cols["score_cp"][t]), int(cols["mate"][t]), str(cols["best"][t]), str(cols["pv"][t]), names, probs)
    return AnalysisRecord(
        source=position.source, line=position.line, game=position.game, ply=position.ply,
        fen=position.fen, mode=mode, wdl=wdl, q=q, score_cp=cp, mate=mate, moves_left=moves_left,
        best=best, pv=pv, policy=policy, nodes=int(cols["nodes"][t]), outcome=outcome, id=position.id,
        played=position.played)


def records(plan, cols: dict, mode: str, upto: int | None = None,
            start: int = 0) -> Iterator[AnalysisRecord | None]:
    """Records of occurrences start.. in input order, with played-move
    losses (None for an occurrence whose row the engine refused: see
    `refused`); stops before an occurrence whose row is >= `upto` (not
    computed yet) or whose loss needs one that is."""
    positions, tasks, errors = plan.positions, plan.tasks, cols["error"]
    limit = len(plan.rows) if upto is None else upto
    current = None
    following = positions[start] if start < len(positions) else None
    for i in range(start, len(positions)):
        if tasks[i] >= limit:
            return
        position, following = following, positions[i + 1] if i + 1 < len(positions) else None
        if errors[tasks[i]]:
            current = None
            yield None
            continue
        next_ready = following is not None and tasks[i + 1] < limit
        if flat.is_next(position, following) and not next_ready:
            return
        record = current if current is not None else record_of(position, cols, tasks[i], mode)
        current = None
        if flat.is_next(position, following) and not errors[tasks[i + 1]]:
            current = record_of(following, cols, tasks[i + 1], mode)
            record.played_loss = played_loss(record, current)
            record.mark = mark_of(record.played_loss, record.played, record.best)
        yield record


def refused(plan, cols: dict) -> list:
    """InputErrors for the occurrences whose rows the engine refused."""
    from lc0_rocm.analysis.inputs import InputError
    errors = cols["error"]
    out = []
    for i in np.flatnonzero(errors[np.asarray(plan.tasks, dtype=np.int64)] != "").tolist():
        p = plan.positions[i]
        out.append(InputError(p.source, p.line, str(errors[plan.tasks[i]])))
    return out


def all_errors(plan, cols: dict) -> list:
    """Read errors and refused rows, by file (in input order) and line."""
    order = {source: k for k, source in enumerate(plan.sources)}
    return sorted(plan.errors + refused(plan, cols), key=lambda e: (order.get(e.source, -1), e.line))


# ---------------------------------------------------------------- files
@contextlib.contextmanager
def atomic_file(path: str, mode: str = "w"):
    """A file under a temporary name in the target's folder, renamed onto
    `path` when the block ends without an error (removed otherwise)."""
    target = pathlib.Path(path)
    handle = tempfile.NamedTemporaryFile(mode, dir=target.parent, prefix=f".{target.name}.",
                                         suffix=".tmp", delete=False,
                                         **({"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}))
    try:
        with handle:
            yield handle.file      # the file itself: each call through the temporary file's wrapper costs a lookup
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~_umask())   # as open() would make it
            os.fsync(handle.fileno())
        os.replace(handle.name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise


@functools.lru_cache(maxsize=1)
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def parquet_schema():
    """The Parquet output's columns (a record's fields)."""
    return parquet_parts.schema()


def require_pyarrow() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise AnalysisError("Parquet output needs pyarrow: pip install 'lc0-rocm[parquet]' "
                           "(or write JSONL: an output name ending in .jsonl)") from None


def write_parquet(path: str, plan, cols: dict, mode: str) -> int:
    """The records as a Parquet table (parquet_schema), the records of
    PARQUET_BATCH input positions a row group, built on every core for a
    big run (parquet_parts): the table of the records writers.records
    makes (tests)."""
    require_pyarrow()
    import pyarrow.parquet as pq
    schema = parquet_schema()
    count = 0
    with atomic_file(path, "wb") as f:
        with pq.ParquetWriter(f, schema) as writer:
            for table in parquet_parts.tables(plan, cols, mode, PARQUET_BATCH,
                                              scratch=os.path.dirname(os.path.abspath(path))):
                writer.write_table(table)
                count += table.num_rows
            if count == 0:
                writer.write_table(schema.empty_table())
    return count


def write_errors(path: str, errors: list) -> None:
    with atomic_file(path) as f:
        for e in errors:
            f.write(f"{e}\n")


def write_outputs(outputs: list[str], pgn_sources: list[str], plan, cols: dict, mode: str) -> dict[str, int]:
    """Every output of a run from its plan and columns."""
    from lc0_rocm.analysis import jsonl, pgn_out
    written = {}
    for path in outputs:
        kind = format_of(path)
        if kind == "jsonl":
            with atomic_file(path) as f:
                written[path] = jsonl.write(f, plan, cols, mode, scratch=os.path.dirname(os.path.abspath(path)))
        elif kind == "parquet":
            written[path] = write_parquet(path, plan, cols, mode)
        else:
            with atomic_file(path) as f:
                written[path] = pgn_out.write_pgn(f, pgn_sources, plan, cols, mode,
                                                  scratch=os.path.dirname(os.path.abspath(path)))
    return written

