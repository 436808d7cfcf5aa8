"""`lc0-rocm analyse` end to end (lc0_rocm/analysis/cli.py, runner.py,
writers.py) on the CPU: every input kind into every output format, the
annotated PGN read back by python-chess, the same bytes whatever the number
of workers, a run killed with SIGKILL and started again ending with the
uninterrupted run's output, malformed input reported and skipped."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import chess
import chess.pgn
import pytest

import lc0_rocm
from analysis_data import (EPD_ERROR_LINES, EPD_LINES, FEN_ERROR_LINES, FEN_LINES, ILLEGAL, OPERA_PLIES,
                           random_games, write_lines, write_pgn)
from lc0_rocm import host, native_core
from lc0_rocm.analysis import cli, runner
from lc0_rocm.analysis.settings import AnalysisError, NetSource, Settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    pgn = write_pgn(folder / "games.pgn", random_games(3, seed=7, max_plies=24), [ILLEGAL])
    epd = write_lines(folder / "suite.epd", EPD_LINES)
    fen = write_lines(folder / "positions.fen", FEN_LINES)
    return folder, [str(pgn), str(epd), str(fen)]


def analyse(argv, capsys=None) -> int:
    code = cli.main(argv)
    if capsys is not None:
        capsys.readouterr()
    return code


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path)]


def test_every_input_kind_into_every_format(inputs, tmp_path, capsys):
    pytest.importorskip("pyarrow", reason="Parquet output needs pyarrow")
    import pyarrow.parquet as pq
    _, files = inputs
    out = tmp_path / "a.jsonl"
    code = cli.main([*files, "-o", str(out), "-o", str(tmp_path / "a.parquet"), "-o", str(tmp_path / "a.pgn"),
                     "-b", "random", "--nodes", "30", "--shard-size", "16"])
    err = capsys.readouterr().err
    assert code == 0, err
    records = read_jsonl(out)
    games = 1 + 3                                    # the opera and three random games
    assert sum(r["source"].endswith("games.pgn") for r in records) == \
        OPERA_PLIES + 1 + sum(g.end().ply() + 1 for g in random_games(3, seed=7, max_plies=24))
    assert len({r["game"] for r in records if r["game"]}) == games
    assert sum(r["source"].endswith(".epd") for r in records) == len(EPD_LINES) - len(EPD_ERROR_LINES)
    errors = open(f"{out}.errors").read().splitlines()
    assert len(errors) == 1 + len(EPD_ERROR_LINES) + len(FEN_ERROR_LINES)
    assert errors[0].startswith(f"{files[0]}:") and "game 2" in errors[0]
    assert [int(e.split(":")[1]) for e in errors[1:]] == EPD_ERROR_LINES + FEN_ERROR_LINES
    assert "3 malformed input(s) skipped" in err.replace(str(len(errors)), "3")
    read = re.search(r"analyse: (\d+) positions \((\d+) distinct, 5 shard\(s\)\) read in", err)   # read, then
    assert read and int(read[1]) >= len(records) and int(read[2]) <= int(read[1])
    assert f"analyse: writing {out}, " in err                                                    # writing
    by_id = {r["id"]: r for r in records if r["id"]}
    assert by_id["mated"]["outcome"] == "checkmate" and by_id["mated"]["best"] is None
    assert by_id["start"]["best"] == by_id["start again"]["best"]     # computed once, reported twice
    assert all(r["nodes"] >= 30 for r in records if not r["outcome"])
    assert all(r["pv"][0] == r["best"] for r in records if r["best"])
    table = pq.read_table(tmp_path / "a.parquet").to_pylist()
    for row in table:
        row["policy"] = [[p["move"], p["p"]] for p in row["policy"]]
    assert table == records
    assert not (tmp_path / "a.jsonl.parts").exists()


def test_annotated_pgn_reads_back_with_its_evals(inputs, tmp_path, capsys):
    _, files = inputs
    out = tmp_path / "a.pgn"
    assert analyse([files[0], "-o", str(out), "-o", str(tmp_path / "a.jsonl"), "-b", "random",
                    "--nodes", "20"], capsys) == 0
    records = {(r["game"], r["ply"]): r for r in read_jsonl(tmp_path / "a.jsonl")}
    with open(out) as f:
        games = []
        while (game := chess.pgn.read_game(f)) is not None:
            games.append(game)
    assert [g.headers["Event"] for g in games] == ["Paris", "random 0", "random 1", "random 2"]
    numbers = [1, 3, 4, 5]                            # game 2 is the illegal one, left out
    marks = evals = 0
    for number, game in zip(numbers, games):
        assert game.headers["Annotator"] == "lc0-rocm"
        for ply, node in enumerate(game.mainline(), start=1):
            r = records[(number, ply)]
            score = node.eval()
            if r["outcome"]:
                assert score is None
                continue
            evals += 1
            turn = node.board().turn
            if r["mate"] is not None:
                assert score.pov(turn).mate() == r["mate"]
            else:
                assert score.pov(turn).score() == r["score_cp"]
            before = records[(number, ply - 1)]
            nags = {chess.pgn.NAG_DUBIOUS_MOVE: "?!", chess.pgn.NAG_MISTAKE: "?", chess.pgn.NAG_BLUNDER: "??"}
            assert [nags[n] for n in node.nags] == ([before["mark"]] if before["mark"] else [])
            marks += bool(before["mark"])
    assert evals > 50 and marks > 0


def test_eval_mode_on_the_cpu_backend(inputs, tmp_path, make_test_net, capsys):
    _, files = inputs
    net = make_test_net("tiny-resnet", seed=4)
    out = tmp_path / "e.jsonl"
    assert analyse([files[1], files[2], "-o", str(out), "-w", str(net), "-b", "cpu", "--eval",
                    "--top-k", "2"], capsys) == 0
    records = read_jsonl(out)
    assert [r["mode"] for r in records] == ["eval"] * len(records)
    network = lc0_rocm.load_network(str(net), backend="cpu")
    for r in records:
        if r["outcome"]:
            assert r["policy"] == [] and r["best"] is None
            continue
        assert len(r["policy"]) == 2 and r["best"] == r["policy"][0][0] and r["nodes"] == 0
        assert abs(sum(r["wdl"]) - 1) < 1e-5 and r["score_cp"] is not None
        board = chess.Board(r["fen"])
        assert chess.Move.from_uci(r["best"]) in board.legal_moves
    network.close()


def _run(argv) -> bytes:
    assert cli.main(argv) == 0
    return open(argv[argv.index("-o") + 1], "rb").read()


@pytest.mark.parametrize("backend", ["random", "cpu"])
def test_same_bytes_whatever_the_workers(inputs, tmp_path, make_test_net, capsys, backend):
    """Shards are fixed by the input; each search is single-threaded and
    its network calls do not depend on the others (random: row by row;
    cpu: each search's batch its own call), so 1 worker with 2 searches
    and 2 worker processes with 3 each give the same bytes."""
    _, files = inputs
    net = ["-w", str(make_test_net("tiny-resnet", seed=5))] if backend == "cpu" else []
    common = [files[0], "-b", backend, *net, "--nodes", "25" if backend == "random" else "12",
              "--shard-size", "8", *(["--every", "3"] if backend == "cpu" else [])]
    one = _run([*common, "-o", str(tmp_path / "one.jsonl"), "--workers", "1", "--searches", "2"])
    two = _run([*common, "-o", str(tmp_path / "two.jsonl"), "--workers", "2", "--searches", "3"])
    three = _run([*common, "-o", str(tmp_path / "three.jsonl"), "--workers", "1", "--searches", "5",
                  "--groups", "3"])
    capsys.readouterr()
    assert one == two == three and one.count(b"\n") > 20


def test_shards_are_searched_ahead_of_the_one_being_saved(inputs, tmp_path, capsys, monkeypatch):
    """One process keeps SHARDS_IN_FLIGHT shards searching at once, so its
    searches have jobs while a finished shard is read and saved; the output
    is the same as one shard at a time."""
    import threading
    from lc0_rocm.analysis import runner
    from lc0_rocm.analysis.worker import ShardWorker
    _, files = inputs
    common = [files[0], "-b", "random", "--nodes", "10", "--shard-size", "6"]
    expected = _run([*common, "-o", str(tmp_path / "plain.jsonl")])
    lock, running, most = threading.Lock(), [0], [0]
    compute = ShardWorker.compute

    def counted(self, rows, progress=None):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.2)             # the others are submitted meanwhile
            return compute(self, rows, progress)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(ShardWorker, "compute", counted)
    assert _run([*common, "-o", str(tmp_path / "ahead.jsonl")]) == expected
    capsys.readouterr()
    assert most[0] == runner.SHARDS_IN_FLIGHT > 2


def recorded(network, events: list, loaded):
    """`network` with its load and close noted in `events` ("loaded",
    "closed") and `loaded` (a threading.Event) set."""
    close = network.close

    def recording_close():
        events.append("closed")
        close()
    network.close = recording_close
    events.append("loaded")
    loaded.set()
    return network


def closed_once_loaded(gate, events: list) -> None:
    """Lets a held-back load finish (`gate`) and waits for the network it
    loaded for a run that had already ended to be closed."""
    gate.set()
    deadline = time.monotonic() + 10
    while events != ["loaded", "closed"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert events == ["loaded", "closed"]


def test_the_network_loads_while_the_inputs_are_planned_and_is_closed_however_the_run_ends(
        inputs, tmp_path, capsys, monkeypatch):
    """An in-process run starts loading its network before it reads the
    inputs (a GPU's set-up beside the planning), searches with that one
    network, and closes it when the run ends: after searching, with nothing
    left to do (every shard already done), and (once loaded) when the run is
    interrupted while the inputs are read, which does not wait for the load."""
    import threading
    from lc0_rocm.analysis import runner
    from lc0_rocm.analysis.settings import NetSource, Settings
    _, files = inputs
    events = []
    load, build_plan = NetSource.load, runner.build_plan
    loaded = threading.Event()

    def recording_load(self, extra_opts=""):
        return recorded(load(self, extra_opts), events, loaded)

    def planning(*args, **kwargs):
        assert loaded.wait(10), "the network was not loading while the inputs were read"
        events.append("planned")
        return build_plan(*args, **kwargs)

    def run(out):
        loaded.clear()
        events.clear()
        return _run([files[1], "-b", "random", "--nodes", "10", "--shard-size", "4", "-o", str(out)])

    monkeypatch.setattr(NetSource, "load", recording_load)
    monkeypatch.setattr(runner, "build_plan", planning)
    records = [json.loads(line) for line in run(tmp_path / "a.jsonl").splitlines()]
    assert any(r["nodes"] >= 10 for r in records)                       # it searched with that network
    assert events == ["loaded", "planned", "closed"]
    monkeypatch.setattr(runner.WorkDir, "remove", lambda self: None)   # the shards stay, as after a kill
    first = run(tmp_path / "again.jsonl")
    assert (tmp_path / "again.jsonl.parts").is_dir()
    assert run(tmp_path / "again.jsonl") == first                    # every shard done: nothing searched
    assert events == ["loaded", "planned", "closed"]

    # Ctrl-C while the inputs are read and the network still loads (a GPU
    # library's first build takes minutes): the run ends at once, and the
    # network is closed when its load is done.
    gate = threading.Event()

    def slow_load(self, extra_opts=""):
        assert gate.wait(10)
        return recording_load(self, extra_opts)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(NetSource, "load", slow_load)
    monkeypatch.setattr(runner, "build_plan", interrupted)
    events.clear()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        runner.run([files[1]], [str(tmp_path / "b.jsonl")], Settings("search", nodes=10), NetSource(None, "random"))
    assert time.monotonic() - started < 5 and events == []
    closed_once_loaded(gate, events)
    capsys.readouterr()


def test_the_python_api_loads_its_network_while_the_input_is_planned(inputs, monkeypatch):
    """lc0_rocm.analyse with no network given loads one beside the reading
    and planning of its input, as the command does, and closes it however
    the caller ends: every record read, the generator closed early, or an
    interrupt while the input is planned (which does not wait for the load)."""
    import threading
    import lc0_rocm.network
    from lc0_rocm.analysis import analyse, plan
    _, files = inputs
    events = []
    load, plan_positions = lc0_rocm.network.load_network, plan.plan_from_positions
    loaded, gate = threading.Event(), threading.Event()
    gate.set()

    def recording_load(*args, **kwargs):
        assert gate.wait(10)
        return recorded(load(*args, **kwargs), events, loaded)

    def planning(*args, **kwargs):
        assert loaded.wait(10), "the network was not loading while the input was read"
        events.append("planned")
        return plan_positions(*args, **kwargs)

    monkeypatch.setattr(lc0_rocm.network, "load_network", recording_load)
    monkeypatch.setattr(plan, "plan_from_positions", planning)
    records = list(analyse(files[1], backend="random", nodes=10))
    assert records and all(r.nodes >= 10 for r in records if r.best is not None)
    assert events == ["loaded", "planned", "closed"]

    events.clear(), loaded.clear()
    records = analyse(files[1], backend="random", nodes=10)
    next(records)
    records.close()                                   # the caller stops early
    assert events == ["loaded", "planned", "closed"]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(plan, "plan_from_positions", interrupted)
    events.clear(), loaded.clear(), gate.clear()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        next(analyse(files[1], backend="random", nodes=10))
    assert time.monotonic() - started < 5 and events == []
    closed_once_loaded(gate, events)


def test_workers_by_default_one_per_gpu_counted_beside_the_planning(inputs, tmp_path, capsys, monkeypatch):
    """The command's default workers: a GPU each (counting them loads the
    GPU library: off the main thread, while the inputs are planned), one
    where there is no GPU or the backend spreads over GPUs itself; nothing
    loaded ahead for a run in worker processes or on Ray, and a network that
    failed to load raised only where the run needs it."""
    import threading
    from lc0_rocm.analysis import runner
    from lc0_rocm.analysis.settings import NetSource
    counted = []

    def counting(backend):
        counted.append((backend, threading.current_thread() is threading.main_thread()))
        return {"random": 0, "cuda-fp16": 3}[backend]
    monkeypatch.setattr(runner, "gpu_count", counting)
    _, files = inputs
    _run([files[1], "-b", "random", "--nodes", "10", "-o", str(tmp_path / "a.jsonl")])
    capsys.readouterr()
    assert counted == [("random", False)]
    workers, loaded = runner._prepare_workers(NetSource(None, "cuda-fp16"), runner.AUTO, False, True)
    assert workers == 3 and loaded.network() is None          # three worker processes load their own
    workers, loaded = runner._prepare_workers(NetSource(None, "demux"), runner.AUTO, False, False)
    assert workers == 1 and counted[-1][0] == "cuda-fp16"      # demux: not counted, one worker
    assert runner._prepare_workers(NetSource(None, "random"), runner.AUTO, True, True)[0] is None

    def broken(self, extra_opts=""):
        raise ValueError("the net is broken")
    monkeypatch.setattr(NetSource, "load", broken)
    workers, loaded = runner._prepare_workers(NetSource(None, "random"), runner.AUTO, False, True)
    assert workers == 1
    with pytest.raises(ValueError, match="broken"):
        loaded.network()


def test_a_worker_process_searches_shards_ahead(monkeypatch):
    """process_main (a local worker process's body, run here in-process)
    keeps SHARDS_IN_FLIGHT search shards at once and returns each one's
    columns; a failing shard is reported and ends the worker."""
    import queue
    import signal
    import threading
    from lc0_rocm.analysis import worker as worker_module
    from lc0_rocm.analysis.settings import Settings
    lock, running, most = threading.Lock(), [0], [0]

    class FakeWorker:
        def __init__(self, *args, **kwargs):
            pass

        def compute(self, rows, progress=None):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                time.sleep(0.2)
                if rows == ["bad"]:
                    raise ValueError("bad shard")
                return {"rows": list(rows)}
            finally:
                with lock:
                    running[0] -= 1

        def cancel(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(worker_module, "ShardWorker", FakeWorker)
    monkeypatch.setattr(signal, "signal", lambda *args: None)     # keep the test process's Ctrl-C
    tasks, results = queue.Queue(), queue.Queue()
    for k in range(5):
        tasks.put((k, [f"row {k}"]))
    tasks.put(None)
    worker_module.process_main(0, Settings(mode="search", nodes=1), None, "", None, None, tasks, results,
                               os.getppid())
    got = [results.get_nowait() for _ in range(results.qsize())]
    assert got[0][0] == "ready"
    assert sorted((key, out["rows"]) for kind, key, out in got if kind == "done") == \
        [(k, [f"row {k}"]) for k in range(5)]
    assert most[0] == worker_module.SHARDS_IN_FLIGHT > 2
    tasks = queue.Queue()
    for item in [(0, ["bad"]), (1, ["fine"]), None]:
        tasks.put(item)
    results = queue.Queue()
    worker_module.process_main(0, Settings(mode="search", nodes=1), None, "", None, None, tasks, results,
                               os.getppid())
    got = [results.get_nowait() for _ in range(results.qsize())]
    assert ("error", 0) in [(kind, key) for kind, key, _ in got]
    assert any("bad shard" in str(payload) for kind, _, payload in got if kind == "error")


def test_api_yields_the_command_records(inputs, tmp_path, capsys):
    _, files = inputs
    assert analyse([files[0], "-o", str(tmp_path / "a.jsonl"), "-b", "random", "--nodes", "20"], capsys) == 0
    expected = read_jsonl(tmp_path / "a.jsonl")
    got = [r.to_dict() for r in lc0_rocm.analyse(files[0], backend="random", nodes=20, shard_size=40)]
    assert json.loads(json.dumps(got)) == expected
    boards = [chess.Board(r["fen"]) for r in expected[:5]]
    evaluated = list(lc0_rocm.analyse(boards, backend="random", evaluate=True))
    assert [e.fen for e in evaluated] == [b.fen() for b in boards] and evaluated[0].policy


def test_the_summary_counts_the_positions_the_engine_refused(tmp_path, capsys):
    """An impossible position (no kings) is read, refused by the engine and
    listed in the errors file; the summary counts the positions read and
    says how many of the distinct ones were refused, and the output line
    the records written, so they add up."""
    epd = tmp_path / "some.epd"
    epd.write_text(f"8/8/8/8/8/8/8/8 w - - id \"empty\";\n{chess.STARTING_BOARD_FEN} w KQkq - id \"start\";\n")
    out = tmp_path / "out.jsonl"
    assert analyse([str(epd), "-o", str(out), "--nodes", "20", "-b", "random"]) == 0
    err = capsys.readouterr().err
    assert "2 positions (2 distinct, 1 of them refused, 2 computed in this run" in err, err
    assert "(1 records)" in err, err
    assert len(read_jsonl(out)) == 1
    assert open(f"{out}.errors").read().count("impossible position") == 1


def test_user_mistakes_are_one_line_messages(inputs, tmp_path, capsys):
    _, files = inputs
    out = str(tmp_path / "x.jsonl")
    with pytest.raises(SystemExit):
        cli.main([files[0], "-o", out, "-b", "random"])            # no --eval / --nodes / --movetime
    assert "--eval, --nodes N or --movetime S" in capsys.readouterr().err
    assert cli.main([str(tmp_path / "missing.pgn"), "-o", out, "--eval", "-b", "random"]) == 2
    assert "no such input file" in capsys.readouterr().err
    assert cli.main([str(tmp_path), "-o", out, "--eval", "-b", "random"]) == 2
    assert "is a folder, not a file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([files[0], "-o", files[0], "--eval", "-b", "random"])
    assert "also an input" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([files[1], "-o", str(tmp_path / "x.pgn"), "--eval", "-b", "random"])
    assert "needs PGN input" in capsys.readouterr().err
    assert cli.main([files[0], "-o", out, "--nodes", "5", "-b", "random", "--option", "Threads=4"]) == 1
    assert "cannot be set for analysis" in capsys.readouterr().err
    assert cli.main([files[0], "-o", out, "--nodes", "5", "-b", "random", "--option", "NoSuch=1"]) == 1
    assert "unknown option" in capsys.readouterr().err
    assert cli.main([files[2], "-o", out, "--eval", "-b", "random", "--every", "2"]) == 0
    assert "note: --every and --played choose among a PGN game's positions" in capsys.readouterr().err
    assert cli.main([os.devnull, "-o", out, "--eval", "-b", "random"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    for bad in (["--groups", "0"], ["--searches", "0"], ["--groups", "x"], ["--workers", "0"],
                ["--workers", "-1"], ["--shard-size", "0"]):
        with pytest.raises(SystemExit):
            cli.main([files[0], "-o", out, "--nodes", "5", "-b", "random", *bad])
        assert f"argument {bad[0]}" in capsys.readouterr().err
    assert cli.main([files[0], "-o", str(tmp_path / "nofolder" / "x.jsonl"), "--eval", "-b", "random"]) == 1
    assert "does not exist" in capsys.readouterr().err
    for name, hint in (("x.txt", "end its name with .jsonl"), ("x.pgn.gz", "compress the file afterwards"),
                       ("x.json", "not one JSON document")):
        assert cli.main([files[0], "-o", str(tmp_path / name), "--eval", "-b", "random"]) == 2
        assert hint in capsys.readouterr().err
        assert not (tmp_path / name).exists()
    with pytest.raises(AnalysisError, match="end its name"):
        runner.run([files[0]], [str(tmp_path / "x.csv")], Settings("eval"), NetSource(None, "random", ""))
    assert cli.main([files[0], "-o", str(tmp_path / "x.ndjson"), "--eval", "-b", "random"]) == 0
    assert "wrote" in capsys.readouterr().err
    (tmp_path / "x.jsonl.parts").mkdir()
    (tmp_path / "x.jsonl.parts" / "manifest.json").write_text('{"settings": "something else"}')
    assert cli.main([files[0], "-o", out, "--nodes", "5", "-b", "random"]) == 1
    assert "unfinished run with other" in capsys.readouterr().err


@pytest.mark.parametrize("limit,message", [
    (["--movetime", "inf"], "movetime must be a finite number of seconds"),
    (["--movetime", "nan"], "movetime must be a finite number of seconds"),
    (["--movetime", "5000"], "movetime=5000 is 83 minutes: times are in seconds"),
    (["--nodes", str(2**63)], "nodes must be 1.."),
])
def test_limits_no_search_ends_within_are_refused_before_the_run(inputs, tmp_path, capsys, limit, message):
    """An endless or mistaken limit (milliseconds given for seconds) is a
    one-line refusal, not a run that never ends and blocks the next one."""
    _, files = inputs
    out = tmp_path / "x.jsonl"
    assert cli.main([files[0], "-o", str(out), "-b", "random", *limit]) == 1
    assert message in capsys.readouterr().err
    assert not os.path.exists(f"{out}.parts")
    with pytest.raises(SystemExit):
        cli.main([files[0], "-o", str(out), "-b", "random", "--nodes", "5", "--searches", "4097"])
    assert "must be 1..4096" in capsys.readouterr().err


def test_a_parts_folder_that_cannot_be_made_is_a_one_line_message(inputs, tmp_path, capsys, monkeypatch):
    _, files = inputs
    out = tmp_path / "y.jsonl"
    (tmp_path / "y.jsonl.parts").write_text("")                 # a file where the folder goes
    assert cli.main([files[0], "-o", str(out), "-b", "random", "--nodes", "5"]) == 1
    assert "a file of that name is in the way" in capsys.readouterr().err
    (tmp_path / "y.jsonl.parts").unlink()

    def refused(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr("pathlib.Path.mkdir", refused)
    assert cli.main([files[0], "-o", str(out), "-b", "random", "--nodes", "5"]) == 1
    assert "y.jsonl.parts: Permission denied" in capsys.readouterr().err


def test_the_api_says_when_an_input_file_is_missing(inputs, tmp_path):
    """A missing file among the inputs is an error, not FEN text skipped
    as malformed with every other file's positions lost."""
    _, files = inputs
    for source in ([files[0], str(tmp_path / "nonexist.pgn")], str(tmp_path / "typo.pgn"),
                   tmp_path / "typo.pgn", ["typo.epd"]):
        with pytest.raises(AnalysisError, match="no such input file"):
            list(lc0_rocm.analyse(source, backend="random", nodes=5))
    with pytest.raises(AnalysisError, match="is a folder"):
        list(lc0_rocm.analyse(str(tmp_path), backend="random", nodes=5))
    with pytest.raises(AnalysisError, match="not a regular file"):
        list(lc0_rocm.analyse(os.devnull, backend="random", nodes=5))
    # FEN strings stay positions, an iterator of them too.
    fens = [chess.STARTING_FEN, "8/8/8/4k3/8/8/8/4K2R w K - 0 1"]
    assert len(list(lc0_rocm.analyse(iter(fens), backend="random", nodes=5))) == 2


@pytest.mark.parametrize("mode", [["--eval"], ["--nodes", "15"]])
def test_without_the_native_core_the_same_records(inputs, tmp_path, mode):
    """No C++ compiler: python-chess and the Python search do the same work
    (slower) and write the same records."""
    _, files = inputs
    env = dict(os.environ, PYTHONPATH=ROOT)
    outputs = []
    for name, extra in (("native", {}), ("python", {"LC0ROCM_NO_NATIVE_CORE": "1"})):
        out = tmp_path / f"{name}.jsonl"
        subprocess.run([sys.executable, "-m", "lc0_rocm", "analyse", files[1], files[2], "-o", str(out),
                        "-b", "random", *mode], env=dict(env, **extra), check=True, capture_output=True,
                       timeout=300)
        outputs.append(out.read_bytes())
        errors = (tmp_path / f"{name}.jsonl.errors").read_text().splitlines()
        assert [int(e.split(":")[1]) for e in errors] == EPD_ERROR_LINES + FEN_ERROR_LINES
    assert outputs[0] == outputs[1]


@pytest.mark.skipif(not native_core.available()[0], reason="the kill test times the native search")
def test_killed_run_resumes_to_the_uninterrupted_output(inputs, tmp_path):
    """SIGKILL the analysing process (its two worker processes see it gone
    and end); the same command again finishes with the output an
    uninterrupted run writes, computing only what was missing."""
    folder, files = inputs
    many = write_pgn(folder / "many.pgn", random_games(3, seed=11, max_plies=30))
    env = dict(os.environ, PYTHONPATH=ROOT)

    def command(out):   # delay: a slow net, so the kill lands mid-way
        return [sys.executable, "-m", "lc0_rocm", "analyse", str(many), "-o", str(out), "-b", "random",
                "--backend-opts", "delay=4", "--nodes", "12", "--shard-size", "8", "--workers", "2"]

    reference = tmp_path / "reference.jsonl"
    subprocess.run(command(reference), env=env, check=True, capture_output=True, timeout=300)
    out = tmp_path / "killed.jsonl"
    parts = tmp_path / "killed.jsonl.parts"
    proc = subprocess.Popen(command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(parts.glob("shard-*.npz"))) < 2:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = len(list(parts.glob("shard-*.npz")))
    assert finished >= 2 and not out.exists()
    for _ in range(100):                      # the workers notice their parent is gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("worker processes outlived the killed run by 10 s")
    again = subprocess.run(command(out), env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    summary = next(line for line in again.stderr.splitlines() if "computed in this run" in line)
    total, computed = map(int, re.search(r"\((\d+) distinct(?:, \d+ of them refused)?, (\d+) computed",
                                         summary).groups())
    assert computed <= total - 8 * finished
    assert out.read_bytes() == reference.read_bytes()
    assert not parts.exists()


def test_a_failed_run_keeps_its_finished_shards_and_nothing_else(inputs, tmp_path, capsys, monkeypatch):
    """A run that fails before any shard is finished (a net that does not
    load) leaves no parts folder, so the corrected command runs instead of
    being refused over the failed one's settings; one that fails after a
    shard keeps it, and the same command resumes from it."""
    _, files = inputs
    out = tmp_path / "x.jsonl"
    parts = tmp_path / "x.jsonl.parts"
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(bytes(range(256)) * 8)
    assert cli.main([files[0], "-o", str(out), "--nodes", "5", "-w", str(bad), "-b", "cpu"]) == 1
    assert "not an lc0 network file" in capsys.readouterr().err
    assert not parts.exists() and not out.exists()
    assert analyse([files[0], "-o", str(out), "--nodes", "5", "-b", "random"], capsys) == 0
    reference = out.read_bytes()

    out.unlink()
    save, saved = runner.WorkDir.save, []

    def fail_after_one(self, k, digest, cols):
        if saved:
            raise RuntimeError("the disk failed")
        saved.append(k)
        save(self, k, digest, cols)
    monkeypatch.setattr(runner.WorkDir, "save", fail_after_one)
    command = [files[0], "-o", str(out), "--nodes", "5", "-b", "random", "--shard-size", "4"]
    with pytest.raises(RuntimeError, match="the disk failed"):
        cli.main(command)
    assert [p.name for p in parts.glob("shard-*.npz")] == [f"shard-{saved[0]:06d}.npz"]
    monkeypatch.setattr(runner.WorkDir, "save", save)
    assert analyse(command, capsys) == 0
    assert out.read_bytes() == reference and not parts.exists()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_big_pgn_annotated_in_parts_equals_annotating_it_whole(tmp_path, monkeypatch, capsys, newline):
    """The annotated PGN of a file cut into parts, a process annotating
    each into a temporary file (games known by their first line, counted
    from each part's start), is the one-process text; a part whose process
    fails: the file is annotated whole, the same text again."""
    from lc0_rocm.analysis import pgn_out, pgn_parallel
    one = write_pgn(tmp_path / "one.pgn", random_games(5, seed=8, max_plies=30), [ILLEGAL]).read_text()
    path = tmp_path / "big.pgn"
    path.write_text(("% an escape line\n\n" + one + "\n") * 6, newline=newline)
    argv = [str(path), "-b", "random", "--nodes", "8"]
    assert analyse([*argv, "-o", str(tmp_path / "whole.pgn")], capsys) == 0
    monkeypatch.setattr(pgn_parallel, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(pgn_parallel, "MIN_PART_BYTES", path.stat().st_size // 6)
    monkeypatch.setattr(host, "usable_cores", lambda: 3)
    assert len(pgn_parallel.parts_of(str(path))) == 3
    ran = []
    real = pgn_parallel.run_module
    monkeypatch.setattr(pgn_parallel, "run_module", lambda *a: ran.append(a[0]) or real(*a))
    assert analyse([*argv, "-o", str(tmp_path / "parts.pgn")], capsys) == 0
    whole = (tmp_path / "whole.pgn").read_text()
    assert ran.count("lc0_rocm.analysis.pgn_out") == 3
    assert (tmp_path / "parts.pgn").read_text() == whole
    assert whole.count("[Annotator ") == 6 * 6 and whole.count("[%eval ") > 6 * 100
    monkeypatch.setattr(pgn_parallel, "run_module", lambda module, args, stdin=b"":
                        None if module.endswith("pgn_out") and args[1] != "0" else real(module, args, stdin))
    assert analyse([*argv, "-o", str(tmp_path / "fallback.pgn")], capsys) == 0
    assert (tmp_path / "fallback.pgn").read_text() == whole
    assert not list(tmp_path.glob(".lc0-rocm-pgn-*"))                 # the parts' folder goes
    # The file given twice: its positions are not one run, so its
    # annotations are worked out here; each copy annotated as one.
    monkeypatch.setattr(pgn_parallel, "run_module", real)
    assert analyse([str(path), *argv, "-o", str(tmp_path / "twice.pgn")], capsys) == 0
    assert (tmp_path / "twice.pgn").read_text() == whole + whole


def test_the_nets_identity_is_its_files_sha256(tmp_path):
    """The manifest names the net by its file's SHA-256 (hashed from a mapping
    of the file), an empty file included."""
    import hashlib
    from lc0_rocm.analysis.settings import NetSource, file_sha256
    data = bytes(range(256)) * 4099
    (tmp_path / "net.pb").write_bytes(data)
    (tmp_path / "empty").write_bytes(b"")
    assert file_sha256(str(tmp_path / "net.pb")) == hashlib.sha256(data).hexdigest()
    assert file_sha256(str(tmp_path / "empty")) == hashlib.sha256(b"").hexdigest()
    assert NetSource(str(tmp_path / "net.pb"), "cpu").identity()["weights_sha256"] == hashlib.sha256(data).hexdigest()
