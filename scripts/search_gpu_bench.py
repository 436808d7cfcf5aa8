#!/usr/bin/env python3
"""The search on a GPU beside lc0's: nodes per second per benchmark position,
how busy the search keeps the GPU, the batch sizes it forms, and how it
scales with threads. One process tree, ours and lc0 in turns.

    python3 scripts/search_gpu_bench.py --net-dir nets --nets t82,bt4,maia-1900 \\
        --backend cuda-fp16 --lc0 .anchors/lc0-master/run-lc0.sh --out DIR

For each net, `--rounds` times in turns: lc0's `benchmark` and ours (the
engine in this process, as `lc0-rocm bench` runs it: fresh tree per
position, no smart pruning, NNCacheSize 200000) on the first `--positions`
benchmark positions at `--movetime` ms each, then the same for
`--long-positions` at `--long-movetime` (lc0's first 10 positions x 3 s).
Then ours over `--threads` (the sweep, on `--sweep-positions` positions)
and over `--grid` (search options to compare, `NAME=V1,V2;NAME2=...`).

Ours: the GPU's pass log (device events around every forward pass, one
timeline for all streams) gives the share of wall time in which some pass
was running ("busy"), the passes' times summed over the wall time
("summed", which counts overlapping passes of several streams each), and
the batch-size histogram. The `sim` backend (a simulated GPU) logs the
same way, so the script runs without a GPU: `--backend sim --lc0 lc0
--lc0-backend random` for a dry run on the CPU.

Writes DIR/search_gpu_bench.json, .md (tables) and .png (per-position nps
and the threads sweep); prints the tables last.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import lc0_batches  # noqa: E402

from lc0_rocm.backends.passes import merge_histograms  # noqa: E402
from lc0_rocm.bench import POSITIONS, board_for  # noqa: E402

BENCH_OPTIONS = {"SmartPruningFactor": 0.0, "NNCacheSize": 200000}   # as `lc0-rocm bench`, lc0 benchmark


@dataclasses.dataclass
class PositionRun:
    engine: str
    net: str
    index: int            # 1-based benchmark position
    nodes: int
    ms: float
    busy: float | None = None       # share of wall time with a pass running
    summed: float | None = None     # passes' times added up, over wall time
    mean_batch: float | None = None
    histogram: dict | None = None
    settings: dict | None = None
    run: str = ""         # "short 1", "long 2": phase and round
    collision_ends: float | None = None  # network calls whose gathering the collision budget ended
    idle_ends: float | None = None       # ... that an idle network ended

    @property
    def nps(self) -> float:
        return 1000.0 * self.nodes / (self.ms + 1.0)


def log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------ lc0
def lc0_positions(output: str) -> list[tuple[int, float]]:
    """(nodes, ms) of each position of `lc0 benchmark`'s output: its last
    'Benchmark time X ms, N nodes' line before the position's bestmove."""
    found = []
    for block in output.split("Position: ")[1:]:
        lines = re.findall(r"Benchmark time (\d+) ms, (\d+) nodes", block)
        if not lines:
            raise RuntimeError(f"no 'Benchmark time' line for a position in lc0's output:\n{block[-1000:]}")
        ms, nodes = lines[-1]
        found.append((int(nodes), float(ms)))
    return found


LC0_PASSES: list = []   # --lc0-batches: lc0's passes by batch size, a run each


def run_lc0(args, net: str, path: pathlib.Path, count: int, movetime: int, threads: int | None = None,
            label: str = ""):
    cmd = [args.lc0, "benchmark", f"--backend={args.lc0_backend}", f"--weights={path}",
           f"--num-positions={count}", f"--movetime={movetime}"]
    if threads:
        cmd.append(f"--threads={threads}")
    if args.lc0_batches:          # the probe counts the passes of the whole run, start-up's few included
        with tempfile.TemporaryDirectory(prefix="lc0-batches-") as folder:
            done, passes = lc0_batches.run(cmd, folder, capture_output=True, text=True)
        LC0_PASSES.append(dict(passes, net=net, run=label, positions=count))
    else:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return [PositionRun("lc0", net, i, nodes, ms, settings={"threads": threads})
            for i, (nodes, ms) in enumerate(lc0_positions(done.stdout + done.stderr), start=1)]


# ------------------------------------------------------------------ ours
PASSES: dict = {}     # --passes: every run's pass log, saved at the end


def run_ours(network, net: str, indices, movetime: int, settings: dict) -> list[PositionRun]:
    from lc0_rocm.engine import Engine
    backend = network.backend
    logged = hasattr(backend, "pass_log_start")
    engine = Engine(network, **BENCH_OPTIONS, **settings)
    asked = settings.get("Threads")
    if asked and asked != engine.search_threads():
        log(f"note: Threads {asked} runs {engine.search_threads()} search threads here "
            "(MaxBatchesInFlight caps them: set it too to run more)")
    runs = []
    for i in indices:
        board = board_for(POSITIONS[i - 1])
        engine.new_game()
        if logged:
            backend.pass_log_start()
        started = time.perf_counter()
        result = engine.search(board, movetime=movetime / 1000.0)
        wall_ms = 1000.0 * (time.perf_counter() - started)
        run = PositionRun("ours", net, i, result.nodes, wall_ms,
                          settings=dict(settings, Threads=engine.search_threads()))
        stats = engine._native.run_stats() if engine._native is not None else None
        if stats:
            calls = max(1, stats["batches"])
            run.collision_ends, run.idle_ends = stats["collision_ends"] / calls, stats["idle_ends"] / calls
        if logged:
            passes = backend.pass_log().within(0.0, wall_ms)
            run.busy = passes.busy_ms() / wall_ms
            run.summed = passes.summed_ms() / wall_ms
            run.mean_batch = passes.mean_batch()
            run.histogram = passes.histogram()
            key = f"{net}|{i}|{sorted(run.settings.items())}|{len(PASSES)}"
            PASSES[key] = [passes.begin_ms, passes.end_ms, passes.positions, passes.stream]
        runs.append(run)
    return runs


def parse_grid(text: str) -> list[dict]:
    grid = [{}]
    for item in filter(None, (t.strip() for t in text.split(";"))):
        name, _, values = item.partition("=")
        grid = [dict(g, **{name.strip(): _number(v)}) for g in grid for v in values.split(",")]
    return grid


def _number(text: str):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


# ------------------------------------------------------------------ report
def ratio_rows(runs: list[PositionRun], count: int) -> list[str]:
    """Markdown rows: per position, median nps of ours and lc0 over rounds, ratio."""
    rows = []
    nets = sorted({r.net for r in runs}, key=lambda n: [r.net for r in runs].index(n))
    for net in nets:
        ours_total, lc0_total = [], []
        cells = []
        for i in range(1, count + 1):
            ours = [r.nps for r in runs if r.net == net and r.engine == "ours" and r.index == i]
            lc0 = [r.nps for r in runs if r.net == net and r.engine == "lc0" and r.index == i]
            o = statistics.median(ours) if ours else float("nan")
            c = statistics.median(lc0) if lc0 else float("nan")
            cells.append(f"{o:,.0f} / {c:,.0f} ({o / c:.2f}x)" if lc0 else f"{o:,.0f}")
        for engine, bucket in (("ours", ours_total), ("lc0", lc0_total)):
            picked = [r for r in runs if r.net == net and r.engine == engine and r.index <= count]
            if picked:
                bucket.append(1000.0 * sum(r.nodes for r in picked) / sum(r.ms for r in picked))
        total = (f"{ours_total[0]:,.0f} / {lc0_total[0]:,.0f} ({ours_total[0] / lc0_total[0]:.2f}x)"
                 if lc0_total else f"{ours_total[0]:,.0f}")
        rows.append(f"| {net} | " + " | ".join(cells) + f" | {total} |")
    return rows


def busy_rows(runs: list[PositionRun]) -> list[str]:
    rows = []
    for r in runs:
        if r.engine != "ours" or r.busy is None:
            continue
        hist = ", ".join(f"{k}: {v}" for k, v in (r.histogram or {}).items())
        settings = ", ".join(f"{k} {v}" for k, v in (r.settings or {}).items())
        ends = (f"{100 * r.collision_ends:.0f} / {100 * r.idle_ends:.0f} %" if r.collision_ends is not None
                else "")
        rows.append(f"| {r.net} | {r.index} | {settings} | {r.nps:,.0f} | {100 * r.busy:.1f} % | "
                    f"{100 * r.summed:.0f} % | {r.mean_batch:.0f} | {ends} | {hist} |")
    return rows


def lc0_batch_rows(report: dict) -> list[str]:
    """Markdown rows: each lc0 run's passes beside ours in the same round of
    the same positions (our runs' pass-log histograms added up)."""
    rows = []
    ours_by_run: dict = {}
    for key in ("short", "long"):
        for r in report.get(key, {}).get("runs", []):
            if r["engine"] == "ours" and r.get("histogram"):
                ours_by_run.setdefault((r["net"], r.get("run", "")), []).append(r)
    for lc0 in report["lc0_passes"]:
        ours = ours_by_run.get((lc0["net"], lc0["run"]), [])
        passes = sum(sum(r["histogram"].values()) for r in ours)
        rows_sum = sum(r["mean_batch"] * sum(r["histogram"].values()) for r in ours)
        merged = merge_histograms(*(r["histogram"] for r in ours))
        rows.append(f"| {lc0['net']} | {lc0['run']} | {lc0['passes']:,} | {lc0['mean_batch']:.0f} | "
                    f"{passes:,} | {rows_sum / passes if passes else 0:.0f} | "
                    + ", ".join(f"{k}: {v}" for k, v in lc0["histogram"].items()) + " | "
                    + ", ".join(f"{k}: {v}" for k, v in merged.items()) + " |")
    return rows


def markdown(report: dict) -> str:
    out = [f"# Search on the GPU: ours vs lc0 ({report['machine']}, {report['date']})", "",
           f"Command: `{report['command']}`", ""]
    for key, title in (("short", "positions x movetime"), ("long", "long run")):
        part = report.get(key)
        if not part:
            continue
        count, movetime = part["positions"], part["movetime"]
        out += [f"## Nodes/s, first {count} positions x {movetime} ms (ours / lc0, medians of "
                f"{report['rounds']} rounds in turns)", "",
                "| net | " + " | ".join(f"pos {i}" for i in range(1, count + 1)) + " | all |",
                "|---|" + "---:|" * (count + 1)]
        out += ratio_rows([PositionRun(**r) for r in part["runs"]], count)
        out.append("")
    busy = busy_rows([PositionRun(**r) for r in report.get("short", {}).get("runs", [])]
                     + [PositionRun(**r) for r in report.get("sweep", [])]
                     + [PositionRun(**r) for r in report.get("grid", [])])
    if report.get("lc0_passes"):
        out += ["## Batch sizes, lc0 against ours over the same positions (lc0's passes counted by "
                "scripts/lc0_batches.cpp over its whole `benchmark` run; ours from the pass log)", "",
                "| net | run | lc0 passes | lc0 mean batch | ours passes | ours mean batch | lc0 batch sizes (passes) "
                "| ours |", "|---|---|---:|---:|---:|---:|---|---|"] + lc0_batch_rows(report) + [""]
    if busy:
        out += ["## Ours: the GPU's passes (busy = some pass running; summed = pass times added up; "
                "ended short = calls whose gathering the collision budget / an idle network ended)", "",
                "| net | pos | settings | nps | busy | summed | mean batch | ended short | batch sizes (passes) |",
                "|---|---:|---|---:|---:|---:|---:|---:|---|"] + busy + [""]
    return "\n".join(out)


def plot(report: dict, path: pathlib.Path) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    runs = [PositionRun(**r) for r in report.get("short", {}).get("runs", [])]
    sweep = [PositionRun(**r) for r in report.get("sweep", [])]
    nets = list(dict.fromkeys(r.net for r in runs + sweep))
    fig, axes = plt.subplots(2, max(1, len(nets)), figsize=(5 * max(1, len(nets)), 8), squeeze=False)
    for col, net in enumerate(nets):
        ax = axes[0][col]
        count = report.get("short", {}).get("positions", 0)
        xs = list(range(1, count + 1))
        for k, engine in enumerate(("ours", "lc0")):
            ys = [statistics.median([r.nps for r in runs if r.net == net and r.engine == engine and r.index == i]
                                    or [0]) for i in xs]
            ax.bar([x + (k - 0.5) * 0.38 for x in xs], ys, width=0.38, label=engine)
        ax.set_title(f"{net}: nodes/s per position")
        ax.set_xticks(xs)
        ax.legend()
        ax = axes[1][col]
        points = sorted({r.settings["Threads"] for r in sweep if r.net == net})
        ys = [sum(r.nodes for r in sweep if r.net == net and r.settings["Threads"] == t)
              * 1000.0 / sum(r.ms for r in sweep if r.net == net and r.settings["Threads"] == t) for t in points]
        ax.plot(points, ys, "o-")
        ax.set_title(f"{net}: nodes/s by Threads")
        ax.set_xticks(points)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nets", default="t82,bt4,maia-1900", help="comma list of names in --net-dir")
    parser.add_argument("--net-dir", default="nets")
    parser.add_argument("--backend", default="cuda-fp16")
    parser.add_argument("--backend-opts", default="")
    parser.add_argument("--lc0", default="", help="lc0 binary (or launcher); empty: ours only")
    parser.add_argument("--lc0-backend", default="cuda-fp16")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--positions", type=int, default=4)
    parser.add_argument("--movetime", type=int, default=4000, help="ms")
    parser.add_argument("--long-positions", type=int, default=10, help="0: skip the long run")
    parser.add_argument("--long-movetime", type=int, default=3000)
    parser.add_argument("--threads", default="1,2,4,8", help="the sweep's Threads values; empty: skip")
    parser.add_argument("--sweep-positions", default="1,2", help="benchmark positions of the sweep and grid")
    parser.add_argument("--sweep-movetime", type=int, default=3000)
    parser.add_argument("--grid", default="", help="search options to compare: NAME=V1,V2;NAME2=V1,...")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a search option for every run of ours (repeatable)")
    parser.add_argument("--out", default=".")
    parser.add_argument("--passes", default="", help="also save every run's pass log here (.npz)")
    parser.add_argument("--lc0-batches", action="store_true",
                        help="count lc0's passes by batch size (scripts/lc0_batches.py: a C++ compiler and the "
                             "CUDA runtime's headers needed) and table them beside ours")
    args = parser.parse_args(argv)

    from lc0_rocm.network import load_network
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    common = {}
    for item in args.set:
        name, _, value = item.partition("=")
        common[name] = _number(value)
    report = {"machine": _machine(args.backend), "date": time.strftime("%Y-%m-%d"),
              "command": " ".join([pathlib.Path(sys.argv[0]).name] + (argv or sys.argv[1:])),
              "rounds": args.rounds, "short": {}, "long": {}, "sweep": [], "grid": []}
    short_runs, long_runs = [], []
    for net in args.nets.split(","):
        path = pathlib.Path(args.net_dir) / f"{net}.pb.gz"
        network = load_network(str(path), backend=args.backend, backend_opts=args.backend_opts or None)
        try:
            for phase, count, movetime, bucket in (("short", args.positions, args.movetime, short_runs),
                                                   ("long", args.long_positions, args.long_movetime, long_runs)):
                for rnd in range(args.rounds if count else 0):
                    label = f"{phase} {rnd + 1}"
                    if args.lc0:
                        runs = run_lc0(args, net, path, count, movetime, label=label)
                        bucket += runs
                        log(f"{net} {phase} round {rnd + 1} lc0:  " + " ".join(f"{r.nps:,.0f}" for r in runs))
                        if args.lc0_batches:
                            log(f"{net} {phase} round {rnd + 1} lc0's passes: {LC0_PASSES[-1]['passes']}, "
                                f"mean batch {LC0_PASSES[-1]['mean_batch']:.1f}")
                    runs = run_ours(network, net, range(1, count + 1), movetime, common)
                    for r in runs:
                        r.run = label
                    bucket += runs
                    log(f"{net} {phase} round {rnd + 1} ours: " + " ".join(
                        f"{r.nps:,.0f}" + (f" ({100 * r.busy:.0f}% busy, b{r.mean_batch:.0f})" if r.busy is not None
                                           else "") for r in runs))
            sweep_at = [int(i) for i in args.sweep_positions.split(",")]
            for threads in filter(None, args.threads.split(",")):
                runs = run_ours(network, net, sweep_at, args.sweep_movetime, dict(common, Threads=int(threads)))
                report["sweep"] += [dataclasses.asdict(r) for r in runs]
                log(f"{net} Threads {threads}: " + " ".join(f"{r.nps:,.0f}" for r in runs))
            for settings in parse_grid(args.grid) if args.grid else []:
                runs = run_ours(network, net, sweep_at, args.sweep_movetime, dict(common, **settings))
                report["grid"] += [dataclasses.asdict(r) for r in runs]
                log(f"{net} {settings}: " + " ".join(
                    f"{r.nps:,.0f} ({100 * r.busy:.0f}% busy, b{r.mean_batch:.0f})" if r.busy is not None
                    else f"{r.nps:,.0f}" for r in runs))
        finally:
            network.close()
    report["short"] = {"positions": args.positions, "movetime": args.movetime,
                       "runs": [dataclasses.asdict(r) for r in short_runs]}
    if long_runs:
        report["long"] = {"positions": args.long_positions, "movetime": args.long_movetime,
                          "runs": [dataclasses.asdict(r) for r in long_runs]}
    if LC0_PASSES:
        report["lc0_passes"] = LC0_PASSES
    if args.passes:
        import numpy as np
        np.savez_compressed(args.passes, **{f"run{k}": np.array(v) for k, v in enumerate(PASSES.values())},
                            keys=np.array(list(PASSES)))
    (out / "search_gpu_bench.json").write_text(json.dumps(report, indent=1))
    text = markdown(report)
    (out / "search_gpu_bench.md").write_text(text)
    if plot(report, out / "search_gpu_bench.png"):
        log(f"plot: {out / 'search_gpu_bench.png'}")
    print(text)
    return 0


def _machine(backend: str) -> str:
    if backend.startswith(("cuda", "rocm")):
        try:
            done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20)
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired):
            pass
    return f"backend {backend}"


if __name__ == "__main__":
    sys.exit(main())
