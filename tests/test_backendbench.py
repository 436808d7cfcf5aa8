"""`lc0-rocm backendbench`: argument handling, statistics, output files."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from lc0_rocm import backendbench as bb
from lc0_rocm.makenet import PRESETS, save_net
from lc0_rocm.makenet import resnet as _resnet_presets  # noqa: F401  (registers the presets)


@pytest.fixture(scope="module")
def tiny_net(tmp_path_factory):
    path = tmp_path_factory.mktemp("bb") / "tiny.pb.gz"
    return save_net(PRESETS["tiny-resnet"](np.random.default_rng(0), blocks=1, filters=8), path)


def test_parse_batches():
    assert bb.parse_batches("1,16, 32,64") == [1, 16, 32, 64]
    for bad in ("", "0", "1,x", "-4", "3.5", "1,,2", "8,"):
        with pytest.raises(bb.BenchError, match="--batches"):
            bb.parse_batches(bad)


def test_lc0_style_batch_range():
    parse = bb.build_parser().parse_args
    assert bb.batch_sizes(parse([])) == bb.parse_batches(bb.DEFAULT_BATCHES)
    assert bb.batch_sizes(parse(["--start-batch-size", "4", "--max-batch-size", "16",
                                 "--batch-step", "4"])) == [4, 8, 12, 16]
    assert bb.batch_sizes(parse(["--start-batch-size", "32"])) == [32]
    with pytest.raises(bb.BenchError, match="batch-size"):
        bb.batch_sizes(parse(["--start-batch-size", "8", "--max-batch-size", "4"]))


def test_summarize_mean_is_total_positions_over_total_time():
    row = bb.summarize(10, [0.1, 0.2, 0.2])
    assert row["runs"] == 3
    assert row["mean_nps"] == pytest.approx(30 / 0.5)
    assert row["median_nps"] == pytest.approx(50)
    assert row["min_nps"] == pytest.approx(50) and row["max_nps"] == pytest.approx(100)
    assert row["mean_ms"] == pytest.approx(500 / 3)
    assert row["stdev_nps"] == pytest.approx(np.std([100, 50, 50], ddof=1))


def test_time_batch_size_runs_at_least_min_runs_on_distinct_slices():
    pool = np.arange(10, dtype=np.float32).reshape(10, 1)
    seen = []
    times = bb.time_batch_size(lambda x, out: seen.append(x[:, 0].tolist()), pool, 4,
                               seconds=0.0, min_runs=3, warmup=1)
    assert len(times) == 3 and all(t >= 0 for t in times)
    # warm-up on slice 0, then slices 0, 1, 0 (two full slices of 4 fit in 10)
    assert seen == [[0, 1, 2, 3], [0, 1, 2, 3], [4, 5, 6, 7], [0, 1, 2, 3]]
    # A batch larger than the pool repeats the pool.
    times = bb.time_batch_size(lambda x, out: seen.append(x[:, 0].tolist()), pool, 25, seconds=0.0, warmup=0)
    assert seen[-1] == list(range(10)) * 2 + list(range(5))
    # Several inputs per position are sliced together.
    pairs = []
    bb.time_batch_size(lambda a, b, out: pairs.append((a.tolist(), b.tolist())), (pool[:, 0], -pool[:, 0]),
                       5, seconds=0.0, min_runs=2, warmup=0)
    assert pairs == [([0, 1, 2, 3, 4], [0, -1, -2, -3, -4]), ([5, 6, 7, 8, 9], [-5, -6, -7, -8, -9])]


def test_time_batch_size_uses_the_backends_memory_and_one_output_triple():
    pool = np.arange(12, dtype=np.float32).reshape(6, 2)
    made, calls = [], []

    def host_empty(shape, dtype=np.float32):
        a = np.full(shape, np.nan, dtype)
        made.append(a)
        return a

    def forward_into(x, out):
        calls.append((x, out))
        out[0][:] = 1.0

    bb.time_batch_size(forward_into, pool, 3, seconds=0.0, min_runs=3, warmup=1, host_empty=host_empty)
    pool_copy, policy, wdl, moves_left = made
    assert policy.shape == (3, 1858) and wdl.shape == (3, 3) and moves_left.shape == (3,)
    np.testing.assert_array_equal(pool_copy, pool)
    for x, out in calls:
        assert x.base is pool_copy          # inputs are slices of the copy in the backend's memory
        assert out[0] is policy and out[1] is wdl and out[2] is moves_left
    assert (policy == 1.0).all()


def test_bench_positions_are_varied_games():
    boards = bb.bench_positions(40, seed=1)
    assert len(boards) == 40
    assert len({b.fen() for b in boards}) > 30
    assert max(len(b.move_stack) for b in boards) > 40
    assert all(any(b.legal_moves) for b in boards)


def test_json_output(tiny_net, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert bb.main(["-w", str(tiny_net), "--backend", "cpu", "--batches", "1,3",
                    "--seconds", "0.05", "--positions", "8", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["backend"] == "cpu" and data["net"] == str(tiny_net)
    assert [r["batch"] for r in data["results"]] == [1, 3]
    for r in data["results"]:
        assert r["runs"] >= 3 and r["min_nps"] <= r["median_nps"] <= r["max_nps"]
        assert r["min_nps"] <= r["mean_nps"] <= r["max_nps"]
    printed = capsys.readouterr().out
    assert "Benchmark batch size 3 with inference average time" in printed
    assert "mean pos/s" in printed


def test_packed_input(tiny_net, tmp_path):
    out = tmp_path / "p.json"
    assert bb.main(["-w", str(tiny_net), "-b", "cpu", "--batches", "2", "--seconds", "0.02",
                    "--positions", "4", "--packed", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["packed"] is True and data["results"][0]["mean_nps"] > 0


def test_csv_output(tiny_net, tmp_path):
    out = tmp_path / "r.csv"
    assert bb.main(["-w", str(tiny_net), "-b", "cpu", "--batches", "2", "--seconds", "0.02",
                    "--positions", "4", "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 1 and rows[0]["batch"] == "2" and float(rows[0]["mean_nps"]) > 0


def test_missing_weights_file_is_a_clear_error(tmp_path, capsys):
    assert bb.main(["-w", str(tmp_path / "nope.pb.gz"), "--batches", "1"]) == 2
    assert "weights file not found" in capsys.readouterr().err


def test_bad_net_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.pb.gz"
    bad.write_bytes(b"not a net at all")
    assert bb.main(["-w", str(bad), "-b", "cpu", "--batches", "1"]) == 2
    assert "lc0-rocm backendbench:" in capsys.readouterr().err


def test_without_weights_uses_net_discovery(tiny_net, tmp_path, monkeypatch, capsys):
    from lc0_rocm import netfiles
    monkeypatch.setattr(netfiles, "find_default_net", lambda *a, **k: tiny_net)
    assert bb.main(["-b", "cpu", "--batches", "1", "--seconds", "0.01", "--positions", "2"]) == 0
    assert str(tiny_net) in capsys.readouterr().out
    monkeypatch.setattr(netfiles, "find_default_net", lambda *a, **k: None)
    assert bb.main(["-b", "cpu", "--batches", "1"]) == 2
    assert "no network file found" in capsys.readouterr().err


def test_plot(tiny_net, tmp_path, capsys):
    out = tmp_path / "p.png"
    args = ["-w", str(tiny_net), "-b", "cpu", "--batches", "1,2", "--seconds", "0.01",
            "--positions", "4", "--plot", str(out)]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert bb.main(args) == 2
        assert "needs matplotlib" in capsys.readouterr().err
        assert not out.exists()
    else:
        assert bb.main(args) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_dispatches_backendbench(tiny_net, capsys):
    from lc0_rocm.cli import main
    assert main(["backendbench", "-w", str(tiny_net), "-b", "cpu", "--batches", "1",
                 "--seconds", "0.01", "--positions", "2"]) == 0
    assert "throughput" in capsys.readouterr().out


def test_threads_option_sets_blas_threads(tiny_net, tmp_path):
    from lc0_rocm.backends import blas_threads
    before = blas_threads.get_threads()
    if before is None:
        pytest.skip("numpy's BLAS here is not OpenBLAS; its threads cannot be set")
    out = tmp_path / "t.json"
    common = ["-w", str(tiny_net), "-b", "cpu", "--batches", "1", "--seconds", "0.01",
              "--positions", "2", "--json", str(out)]
    try:
        assert bb.main(common + ["--threads", "2"]) == 0
        assert json.loads(out.read_text())["blas_threads"] == 2
        assert bb.main(common) == 0  # default: one thread, like lc0's eigen backend
        assert json.loads(out.read_text())["blas_threads"] == 1
    finally:
        blas_threads.set_threads(before)
    assert bb.main(["-w", str(tiny_net), "--threads", "0"]) == 2


def test_plot_draws_throughput_over_batch_size(monkeypatch, tmp_path):
    """plot() through a stand-in for matplotlib (not installed everywhere):
    mean line over batch sizes, min-max band, log2 x axis, file saved."""
    import sys
    import types

    calls = {}

    class Axes:
        def plot(self, x, y, **kw):
            calls["plot"] = (list(x), list(y))

        def fill_between(self, x, lo, hi, **kw):
            calls["band"] = (list(lo), list(hi))

        def set_xscale(self, scale, **kw):
            calls["xscale"] = (scale, kw)

        def set_xticks(self, ticks):
            calls["xticks"] = list(ticks)

        def set_ylim(self, **kw):
            calls["ylim"] = kw

        def set_title(self, title, **kw):
            calls["title"] = title

        def __getattr__(self, name):
            return lambda *a, **k: None

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, path):
            calls["saved"] = str(path)

    pyplot = types.SimpleNamespace(subplots=lambda **kw: (Figure(), Axes()),
                                   close=lambda fig: calls.setdefault("closed", True))
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.use = lambda backend: calls.setdefault("backend", backend)
    matplotlib.pyplot = pyplot
    monkeypatch.setitem(sys.modules, "matplotlib", matplotlib)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)

    rows = [bb.summarize(1, [0.01, 0.02]), bb.summarize(8, [0.02, 0.04])]
    meta = {"backend": "cpu", "net": "/nets/maia.pb.gz", "device": "Some CPU",
            "date": "2026-11-22 15:00 UTC"}
    bb.plot(tmp_path / "x.png", rows, meta, compare=[("lc0", [(1, 50.0), (4, 70.0)])])
    assert calls["backend"] == "Agg" and calls["saved"] == str(tmp_path / "x.png")
    assert calls["plot"] == ([1, 4], [50.0, 70.0])      # the overlay, drawn last
    assert calls["xticks"] == [1, 4, 8] and calls["ylim"] == {"bottom": 0}
    assert "Some CPU" in calls["title"] and "2026-11-22" in calls["title"] and "maia" in calls["title"]
    assert calls["band"] == ([r["min_nps"] for r in rows], [r["max_nps"] for r in rows])
    assert calls["xscale"] == ("log", {"base": 2}) and calls["closed"]


def test_csv_and_json_together_with_the_same_metadata(tiny_net, tmp_path, capsys):
    """Issue 10.10: --csv and --json combine; the CSV rows carry the JSON's metadata."""
    out_csv, out_json = tmp_path / "r.csv", tmp_path / "r.json"
    assert bb.main(["-w", str(tiny_net), "-b", "cpu", "--batches", "1,2", "--seconds", "0.01",
                    "--positions", "4", "--csv", str(out_csv), "--json", str(out_json)]) == 0
    data = json.loads(out_json.read_text())
    rows = list(csv.DictReader(out_csv.open()))
    meta = {k: v for k, v in data.items() if k != "results"}
    assert {"device", "date", "cpu", "blas_threads", "net", "backend"} <= set(meta)
    assert [int(r["batch"]) for r in rows] == [1, 2]
    for row in rows:
        assert {k: row[k] for k in meta} == {k: str(v) for k, v in meta.items()}
    printed = capsys.readouterr().out
    assert f"wrote {out_csv}" in printed and f"wrote {out_json}" in printed


@pytest.mark.parametrize("option", ["--csv", "--json", "--plot"])
def test_unwritable_output_fails_before_the_run(option, tiny_net, tmp_path, monkeypatch, capsys):
    """Issue 10.6: a bad output path is reported before any timing starts."""
    monkeypatch.setattr(bb, "time_batch_size", lambda *a, **k: pytest.fail("the run started"))
    for bad in (tmp_path / "missing" / "out.x", tmp_path):
        assert bb.main(["-w", str(tiny_net), "-b", "cpu", option, str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("lc0-rocm backendbench: cannot write") and "Traceback" not in err


def test_unknown_backend_is_named_not_the_net(tiny_net, capsys):
    assert bb.main(["-w", str(tiny_net), "-b", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "unknown backend 'nosuch'" in err and str(tiny_net) not in err


def test_compare_reads_our_csv_and_lc0_logs(tmp_path):
    ours = tmp_path / "ours.csv"
    ours.write_text("batch,mean_nps,backend\n1,10.5,rocm\n64,900,rocm\n")
    assert bb.read_comparison(ours) == ("rocm (ours.csv)", [(1, 10.5), (64, 900.0)])
    log = tmp_path / "lc0.log"
    log.write_text("noise\nBenchmark batch size 32 with inference average time 1.5ms - throughput 21333.3 nps.\n"
                   "Benchmark batch size 8 with inference average time 0.9ms - throughput 8888.9 nps.\n")
    assert bb.read_comparison(log) == ("lc0.log", [(8, 8888.9), (32, 21333.3)])
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    with pytest.raises(bb.BenchError, match="--compare"):
        bb.read_comparison(junk)
    with pytest.raises(bb.BenchError, match="--compare"):
        bb.read_comparison(tmp_path / "missing.csv")


def test_real_plot_with_overlay(tiny_net, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the plot extra)")
    other = tmp_path / "lc0.log"
    other.write_text("Benchmark batch size 1 with inference average time 1ms - throughput 1000 nps.\n")
    out = tmp_path / "p.png"
    assert bb.main(["-w", str(tiny_net), "-b", "cpu", "--batches", "1,2", "--seconds", "0.01",
                    "--positions", "4", "--plot", str(out), "--compare", str(other)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {out}" in capsys.readouterr().out


def test_random_backend_needs_no_net(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LC0ROCM_CACHE", str(tmp_path / "cache"))
    assert bb.main(["-b", "random", "--batches", "1,8", "--seconds", "0.01", "--positions", "8",
                    "--packed"]) == 0
    out = capsys.readouterr().out
    assert "backend random" in out and "Benchmark batch size 8" in out


def test_help_description_is_whole(capsys):
    """`backendbench --help` shows the first paragraph of the docstring, not a line cut mid-sentence."""
    from lc0_rocm import backendbench
    with pytest.raises(SystemExit):
        backendbench.build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "raw network throughput over batch sizes, like lc0 backendbench." in text


@pytest.mark.parametrize("batches", [list(range(1, 1025)), list(range(1, 65)) + list(range(96, 1025, 32)),
                                     [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]])
def test_tick_labels_never_crowd(batches):
    """Labelled ticks at most MAX_TICK_LABELS + 1, spread over the log axis,
    the first and last always shown (a plot with many batch sizes stays readable)."""
    import math
    from lc0_rocm import backendbench
    labels = backendbench.tick_labels(batches)
    shown = [b for b, label in zip(batches, labels) if label]
    assert labels[0] and labels[-1] and len(shown) <= backendbench.MAX_TICK_LABELS + 1
    span = math.log2(batches[-1]) - math.log2(batches[0])
    gaps = [math.log2(b) - math.log2(a) for a, b in zip(shown, shown[1:])]
    assert min(gaps) >= span / backendbench.MAX_TICK_LABELS - 1e-9 or len(batches) <= backendbench.MAX_TICK_LABELS


@pytest.mark.parametrize("seconds", ["inf", "nan", "0", "-1"])
def test_seconds_must_be_finite_and_positive(seconds, capsys):
    assert bb.main(["-b", "random", "--batches", "1", "--seconds", seconds]) != 0
    assert "--seconds" in capsys.readouterr().err


def test_a_batch_too_big_for_memory_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def no_room(*args, **kwargs):
        raise MemoryError
    monkeypatch.setattr(bb, "time_batch_size", no_room)
    assert bb.main(["-b", "random", "--batches", "100000000", "--seconds", "0.01", "--positions", "4"]) != 0
    assert "not enough memory for batch size 100000000" in capsys.readouterr().err
