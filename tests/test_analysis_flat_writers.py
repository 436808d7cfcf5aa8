"""The writers that work straight from the columns (lc0_rocm/analysis/flat.py):
JSONL lines are the bytes of json.dumps of each record writers.records
makes, and the Parquet table is the table of those records: search and eval
mode, PGN games with played-move losses and marks, EPD ids, FEN lines, rows
the engine refused, names that JSON must escape."""
from __future__ import annotations

import json

import pytest

from analysis_data import EPD_LINES, FEN_LINES, ILLEGAL, random_games, write_lines, write_pgn
from lc0_rocm import host, native_core
from lc0_rocm.analysis import flat, jsonl, writers
from lc0_rocm.analysis.inputs import Selection
from lc0_rocm.analysis.plan import build_plan
from lc0_rocm.analysis.settings import NetSource, Settings
from lc0_rocm.analysis.worker import ShardWorker

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs") / 'named "é" \\ here'
    folder.mkdir()
    pgn = write_pgn(folder / "games.pgn", random_games(4, seed=11, max_plies=30), [ILLEGAL])
    epd = write_lines(folder / "suite.epd", EPD_LINES + ['8/8/8/8/8/8/8/K1k5 w - - id "ü \\\\ \t";'])
    fen = write_lines(folder / "positions.fen", FEN_LINES)
    return build_plan([str(pgn), str(epd), str(fen)], None, Selection(), 64)


def reference(plan, cols, mode) -> list[str]:
    return [json.dumps(r.to_dict(), separators=(",", ":")) for r in writers.records(plan, cols, mode)
            if r is not None]


@pytest.fixture(scope="module", params=["search", "eval"])
def computed(plan, request):
    mode = request.param
    settings = Settings(mode, nodes=12) if mode == "search" else Settings(mode)
    worker = ShardWorker(settings, source=NetSource(None, "random", ""))
    try:
        return mode, worker.compute(plan.rows)
    finally:
        worker.close()


@pytest.fixture(params=[None, 7], ids=["one-chunk", "chunks-of-7"])
def chunk(request, monkeypatch):
    """The writers' chunks of occurrences: all in one, or cut every 7
    (a played move's loss reaching into the next chunk)."""
    if request.param:
        monkeypatch.setattr(flat, "CHUNK", request.param)
    return request.param


def test_lines_are_the_records_json(plan, computed, chunk):
    mode, cols = computed
    expected = reference(plan, cols, mode)
    assert list(jsonl.lines(plan, cols, mode)) == expected
    records = [json.loads(line) for line in expected]
    assert any(r["mark"] for r in records) and any(r["played_loss"] is not None for r in records)
    assert any(r["id"] and "ü" in r["id"] and "\\" in r["id"] and "\t" in r["id"] for r in records)  # escaped
    assert any(r["outcome"] for r in records) and len(records) < len(plan.positions)   # refused rows left out


def test_parquet_table_is_the_records_table(plan, computed, tmp_path, monkeypatch, chunk):
    pytest.importorskip("pyarrow", reason="Parquet output needs pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq
    mode, cols = computed
    monkeypatch.setattr(writers, "PARQUET_BATCH", 50)          # several row groups
    path = str(tmp_path / "out.parquet")
    rows = [r.to_dict() for r in writers.records(plan, cols, mode) if r is not None]
    assert writers.write_parquet(path, plan, cols, mode) == len(rows)
    for row in rows:
        row["policy"] = [{"move": m, "p": p} for m, p in row["policy"]]
    expected = pa.Table.from_pylist(rows, schema=writers.parquet_schema())
    table = pq.read_table(path)
    assert table.schema.equals(expected.schema)
    assert table.to_pylist() == expected.to_pylist()
    groups = {i // 50 for i, r in enumerate(writers.records(plan, cols, mode)) if r is not None}
    assert pq.ParquetFile(path).num_row_groups == len(groups)          # 50 input positions a group


def test_parquet_written_in_parts_is_the_file_of_one_process(plan, computed, tmp_path, monkeypatch):
    """Whole row groups a part, built in a process each, read back in
    order: the bytes of the file one process writes; a failing part: its
    file all the same, no temporary file left."""
    pytest.importorskip("pyarrow", reason="Parquet output needs pyarrow")
    from lc0_rocm.analysis import parquet_parts, pgn_parallel, position_parts
    mode, cols = computed
    monkeypatch.setattr(writers, "PARQUET_BATCH", 16)
    folder = tmp_path / "out"
    folder.mkdir()
    writers.write_parquet(str(folder / "whole.parquet"), plan, cols, mode)
    monkeypatch.setattr(position_parts, "PART_POSITIONS", 10)
    monkeypatch.setattr(host, "usable_cores", lambda: 4)
    built_here = []
    real_tables = parquet_parts.group_tables
    monkeypatch.setattr(parquet_parts, "group_tables", lambda *a: built_here.append(1) or real_tables(*a))
    writers.write_parquet(str(folder / "parts.parquet"), plan, cols, mode)
    assert not built_here                                   # every group built by a part's process
    whole = (folder / "whole.parquet").read_bytes()
    assert (folder / "parts.parquet").read_bytes() == whole
    real, calls = pgn_parallel.run_module, []

    def second_fails(module, args, stdin=b""):
        calls.append(module)
        return None if len(calls) == 2 else real(module, args, stdin)
    monkeypatch.setattr(pgn_parallel, "run_module", second_fails)
    writers.write_parquet(str(folder / "fallback.parquet"), plan, cols, mode)
    assert (folder / "fallback.parquet").read_bytes() == whole and len(calls) == 4
    assert sorted(p.name for p in folder.iterdir()) == ["fallback.parquet", "parts.parquet", "whole.parquet"]


def test_pgn_annotations_are_the_records(plan, computed, chunk):
    import chess
    import chess.engine
    from lc0_rocm.analysis import pgn_out
    mode, cols = computed
    expected: dict = {}
    for r in writers.records(plan, cols, mode):
        if r is None or r.game is None:
            continue
        turn = r.fen.split()[1] == "w"
        score = (chess.engine.PovScore(chess.engine.Mate(r.mate), turn) if r.mate is not None else
                 chess.engine.PovScore(chess.engine.Cp(r.score_cp), turn) if r.score_cp is not None else None)
        fen = r.fen if r.mark is not None and r.best else None      # for the better move's SAN
        expected.setdefault(r.source, {}).setdefault(r.line, {})[r.ply] = (score, r.mark, r.best, fen)
    got = {source: {line: {ply: (None if a[0] is None else pgn_out.pov_score(a[0]), *a[1:])
                           for ply, a in plies.items()} for line, plies in lines.items()}
           for source, lines in pgn_out.annotations(plan, cols, mode).items()}
    assert expected and got == expected


def test_jsonl_written_in_parts_is_the_lines_of_one_process(plan, computed, tmp_path, monkeypatch):
    """A part of the positions per process (the part's rows and columns
    sent to it), files joined in order: the bytes of the lines made whole;
    a failing part: the lines made whole, and no temporary files left."""
    import io
    from lc0_rocm.analysis import pgn_parallel
    mode, cols = computed
    whole = "".join(line + "\n" for line in jsonl.lines(plan, cols, mode))
    from lc0_rocm.analysis import position_parts
    monkeypatch.setattr(position_parts, "PART_POSITIONS", 10)
    monkeypatch.setattr(host, "usable_cores", lambda: 4)
    real, calls = pgn_parallel.run_module, []
    monkeypatch.setattr(pgn_parallel, "run_module", lambda *a: calls.append(a[0]) or real(*a))
    made_here = []
    real_lines = jsonl.lines
    monkeypatch.setattr(jsonl, "lines", lambda *a, **k: made_here.append(1) or real_lines(*a, **k))
    out = io.StringIO()
    assert jsonl.write(out, plan, cols, mode, scratch=str(tmp_path)) == whole.count("\n")
    assert out.getvalue() == whole and calls == ["lc0_rocm.analysis.jsonl"] * 4 and not made_here
    calls.clear()

    def second_fails(module, args, stdin=b""):
        calls.append(module)
        return None if len(calls) == 2 else real(module, args, stdin)
    monkeypatch.setattr(pgn_parallel, "run_module", second_fails)
    out = io.StringIO()
    assert jsonl.write(out, plan, cols, mode, scratch=str(tmp_path)) == whole.count("\n")
    assert out.getvalue() == whole and not list(tmp_path.iterdir())


def test_a_big_run_has_more_parts_than_cores_and_runs_a_core_s_count_at_once(plan, computed, tmp_path,
                                                                            monkeypatch):
    """Parts capped at PART_MOST positions: more parts than cores, at most
    a part per core running (so the payloads held at once stay bounded),
    the same lines."""
    import io
    import threading
    import time
    from lc0_rocm.analysis import pgn_parallel, position_parts
    mode, cols = computed
    whole = "".join(line + "\n" for line in jsonl.lines(plan, cols, mode))
    monkeypatch.setattr(position_parts, "PART_POSITIONS", 5)
    monkeypatch.setattr(position_parts, "PART_MOST", 10)
    monkeypatch.setattr(host, "usable_cores", lambda: 2)
    parts = position_parts.count(plan)
    assert parts == min(-(-len(plan.tasks) // 10), len(plan.tasks) // 5) and parts > 2
    real, lock, running, most = pgn_parallel.run_module, threading.Lock(), [0], [0]

    def counted(*a):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        try:
            return real(*a)
        finally:
            with lock:
                running[0] -= 1
    monkeypatch.setattr(pgn_parallel, "run_module", counted)
    out = io.StringIO()
    assert jsonl.write(out, plan, cols, mode, scratch=str(tmp_path)) == whole.count("\n")
    assert out.getvalue() == whole and most[0] == 2


def test_a_part_of_the_positions_is_a_table_of_its_own(plan):
    positions = plan.positions
    for start, stop in ((0, len(positions)), (3, 40), (len(positions) - 5, len(positions)), (7, 7)):
        part, named = positions.part(start, stop)
        assert list(part) == positions[start:stop]
        assert [named[t] for t in part.tasks] == list(plan.tasks[start:stop])
