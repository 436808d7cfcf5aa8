"""`lc0-rocm bench`: lc0's positions and limits, per-position and total nps."""
from __future__ import annotations

import re
import shutil
import subprocess

import chess
import pytest

from lc0_rocm import bench
from tests.uci_fakes import FakeEngine, FakeNetwork


@pytest.mark.skipif(shutil.which("lc0") is None, reason="needs the lc0 binary on PATH")
def test_positions_are_lc0s():
    """lc0 prints its benchmark positions; ours must be the same list."""
    proc = subprocess.run(["lc0", "benchmark", "--backend=random", "--nodes=1",
                           f"--num-positions={len(bench.POSITIONS)}"],
                          capture_output=True, text=True, timeout=120)
    theirs = re.findall(r"^Position: \d+/\d+ (.*)$", proc.stdout, flags=re.M)
    assert theirs == bench.POSITIONS


def test_positions_parse_with_history():
    for position in bench.POSITIONS:
        board = bench.board_for(position)
        assert board.is_valid() or board.status() == chess.STATUS_TOO_MANY_CHECKERS
        assert len(board.move_stack) == len(position.partition(" moves ")[2].split())
    assert len(bench.board_for(bench.POSITIONS[18]).move_stack) == 4


def test_defaults_and_bad_arguments():
    args = bench.parse_args([])
    assert (args.movetime, args.num_positions, args.nodes, args.nncache) == (500, 10, -1, 200000)
    for bad in (["--num-positions", "0"], ["--num-positions", "35"], ["--nodes", "-1", "--movetime", "-1"],
                ["--nodes", "0"], ["--threads", "x"], ["--nodes", "-5"], ["--nodes", str(2**63)],
                ["--movetime", "-7"], ["--fen", ""], ["--fen", "  "]):
        with pytest.raises(SystemExit):
            bench.parse_args(bad)


def test_run_reports_each_position_and_the_total():
    engine = FakeEngine(FakeNetwork("x"))
    lines = []
    results = bench.run(engine, bench.POSITIONS[:3], nodes=7, movetime_ms=None, out=lines.append)
    assert [r[0] for r in results] == [7, 7, 7]
    assert engine.new_games == 3                        # a fresh tree for every position
    searches = [engine.searches.get_nowait() for _ in range(3)]
    assert all(s["nodes"] == 7 and s["movetime"] is None for s in searches)
    assert searches[0]["fen"] == chess.STARTING_FEN
    text = "\n".join(lines)
    assert text.count("Position: ") == 3 and "Position: 3/3" in text
    assert text.count("bestmove ") == 3 and text.count("Position nps: ") == 3
    assert re.search(r"Benchmark time \d+ ms, 7 nodes, \d+ nps, move \w+", text)
    total = bench.summary(results)
    ms = sum(r[1] for r in results)
    assert f"Nodes searched  : 21" in total and f"Total time (ms) : {ms}" in total
    assert f"Nodes/second    : {round(21000 / (ms + 1))}" in total


def test_movetime_is_passed_in_seconds():
    engine = FakeEngine(FakeNetwork("x"))
    bench.run(engine, bench.POSITIONS[:1], nodes=None, movetime_ms=20, out=lambda line: None)
    search = engine.searches.get_nowait()
    assert search["movetime"] == pytest.approx(0.02) and search["nodes"] is None


def test_missing_net_says_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert bench.main(["--nodes", "1"]) == 1
    assert "fetch-net" in capsys.readouterr().err


def test_bench_with_maia_on_cpu(maia_path, capsys):
    assert bench.main(["--weights", str(maia_path), "--backend", "cpu", "--nodes", "20",
                       "--movetime", "-1", "--num-positions", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("Position: ") == 2 and "Nodes/second" in out
    moves = re.findall(r"^bestmove (\S+)$", out, flags=re.M)
    for position, move in zip(bench.POSITIONS, moves):
        assert chess.Move.from_uci(move) in bench.board_for(position).legal_moves
    searched = int(re.search(r"Nodes searched  : (\d+)", out).group(1))
    assert 2 * 20 <= searched <= 2 * 20 + 2 * 16     # node limit, plus at most a batch in flight


def test_full_benchmark_defaults_are_lc0_benchmarks():
    args = bench.parse_args([], full=True)
    assert (args.movetime, args.num_positions) == (10000, 34)


def test_bench_random_backend_needs_no_net(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LC0_ROCM_CACHE", str(tmp_path / "cache"))
    assert bench.main(["--backend", "random", "--backend-opts", "seed=3", "--nodes", "30",
                       "--movetime", "-1", "--num-positions", "2"]) == 0
    out = capsys.readouterr().out
    assert "Loading weights file from: <none> (backend random)" in out
    assert out.count("Position: ") == 2 and "Nodes/second" in out


def test_load_time_script_times_an_engines_creation_with_its_options(maia_path):
    """scripts/load_time.py --engine: after each overlapped load, an Engine's
    creation with the --set options (what a GPU's warm-up adds before the
    first search; measured there, run here on the cpu backend)."""
    import pathlib
    import sys
    script = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "load_time.py"
    out = subprocess.run([sys.executable, str(script), "--weights", str(maia_path), "--backend", "cpu",
                          "--rounds", "1", "--engine", "--set", "MinibatchSize=16"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^round 1: overlapped \d+\.\d{3}$", out.stdout, flags=re.M), out.stdout
    assert re.search(r"^round 1: engine \d+\.\d{3} \(minibatch 16, 1 search threads\)$", out.stdout, flags=re.M)
    assert out.stdout.count("engine ") == 1          # after the overlapped load only


def test_load_time_script_times_creations_in_one_process(maia_path):
    """scripts/load_time.py --creation: the weights read once, the backend
    created --rounds times (streams timed only on a GPU backend)."""
    import pathlib
    import sys
    script = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "load_time.py"
    out = subprocess.run([sys.executable, str(script), "--weights", str(maia_path), "--backend", "cpu",
                          "--rounds", "3", "--creation"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^weights read \d+\.\d{3} s$", out.stdout, flags=re.M), out.stdout
    assert [int(n) for n in re.findall(r"^creation (\d+): \d+\.\d{3} s$", out.stdout, flags=re.M)] == [1, 2, 3]
    assert "streams" not in out.stdout


@pytest.mark.parametrize("fen", ["8/8/8/8/8/8/8/8 w - - 0 1", "4k3/8/8/8/8/8/8/PPPPPPPP w - - 0 1"])
def test_a_position_no_search_starts_from_is_refused_before_the_run(fen, capsys):
    assert bench.main(["--backend", "random", "--nodes", "10", "--fen", fen]) == 1
    err = capsys.readouterr().err
    assert "bad position: invalid position" in err and "Traceback" not in err


def test_movetime_is_milliseconds_however_long(capsys):
    # 25 minutes in milliseconds is a bench setting, not a mistaken second
    # count: the node limit ends each search long before.
    assert bench.main(["--backend", "random", "--nodes", "20", "--movetime", "1500000",
                       "--num-positions", "1"]) == 0
    assert "Nodes/second" in capsys.readouterr().out
