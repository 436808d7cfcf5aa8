"""`lc0-rocm backendbench`: raw network throughput over batch sizes, like
`lc0 backendbench`.

numpy backends run with one BLAS thread unless --threads says otherwise.
For each batch size the backend runs repeated forward passes over encoded
positions from varied games (a different slice of the pool each run) for
about --seconds, after untimed warm-up runs (inputs and outputs in buffers
allocated once, in the memory the backend moves fastest: page-locked on GPU
backends, as lc0 keeps its own), and the command reports
positions per second: mean (all positions / all time, lc0's figure), median
and spread (standard deviation, min, max) over the runs.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time

import chess
import numpy as np

from lc0_rocm.buildcache import cpu_model
from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.sizes import POLICY_SIZE

DEFAULT_BATCHES = "1,16,32,64,128,256"
POOL_SIZE = 512
WARMUP_RUNS = 2
MIN_RUNS = 3
FIELDS = ["batch", "runs", "mean_nps", "median_nps", "stdev_nps", "min_nps", "max_nps", "mean_ms"]
# lc0's own backendbench line, for --compare with a saved lc0 log.
LC0_LINE = re.compile(r"Benchmark batch size (\d+) with inference average time [\d.]+ ?ms "
                      r"- throughput ([\d.]+) nps")


class BenchError(Lc0RocmError):
    """A benchmark that cannot run (bad arguments, missing net)."""


def parse_batches(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise BenchError(f"--batches takes comma-separated positive integers, got {text!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise BenchError(f"--batches takes comma-separated positive integers, got {text!r}")
    return sizes


def batch_sizes(args) -> list[int]:
    """--batches, or the lc0-style --start-batch-size/--max-batch-size/--batch-step range."""
    start, stop, step = args.start_batch_size, args.max_batch_size, args.batch_step
    if start is None and stop is None and step is None:
        return parse_batches(args.batches)
    start = 1 if start is None else start
    stop = start if stop is None else stop
    step = 1 if step is None else step
    if start < 1 or stop < start or step < 1:
        raise BenchError("need 1 <= --start-batch-size <= --max-batch-size and --batch-step >= 1")
    return list(range(start, stop + 1, step))


def bench_positions(count: int, seed: int = 0) -> list[chess.Board]:
    """Positions from seeded random games, sampled at plies 0..~100, with
    their move history (so history planes are filled as in real search)."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(0, 100)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if any(board.legal_moves):
            boards.append(board)
    return boards


def encode_pool(boards, input_format: int, packed: bool = False) -> tuple[np.ndarray, ...]:
    """Inputs for `boards` by our encoder: (planes (N, 112, 8, 8),), or with
    `packed` lc0's compact (masks (N, 112) uint64, values (N, 112) float32)."""
    from lc0_rocm import encoder
    if packed:
        masks, values, _ = encoder.encode_batch_packed(boards, input_format)
        return np.ascontiguousarray(masks), np.ascontiguousarray(values, dtype=np.float32)
    return (np.ascontiguousarray(encoder.encode_batch(boards, input_format), dtype=np.float32),)


def time_batch_size(forward_into, pool, batch: int, seconds: float, host_empty=np.empty,
                    min_runs: int = MIN_RUNS, warmup: int = WARMUP_RUNS) -> list[float]:
    """Seconds per call forward_into(*inputs, out) on `batch` positions, over
    >= min_runs runs lasting about `seconds` in all. `pool` is an array or a
    tuple of arrays with one row per position, copied into `host_empty`
    memory (the backend's fastest: page-locked on GPU backends); each run
    takes the next slice of rows and writes every output into one reused
    triple `out`, as lc0 and our search keep their buffers."""
    pool = pool if isinstance(pool, tuple) else (pool,)
    size = len(pool[0])
    repeat = -(-batch // size) if size < batch else 1
    held = []
    for a in pool:
        h = host_empty((size * repeat, *a.shape[1:]), a.dtype)
        h[:] = np.concatenate([a] * repeat) if repeat > 1 else a
        held.append(h)
    size *= repeat
    out = (host_empty((batch, POLICY_SIZE), np.float32), host_empty((batch, 3), np.float32),
           host_empty(batch, np.float32))
    slices = [tuple(a[s:s + batch] for a in held) for s in range(0, size - batch + 1, batch)]
    for i in range(warmup):
        forward_into(*slices[i % len(slices)], out)
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(times) < min_runs or time.perf_counter() < deadline:
        inputs = slices[len(times) % len(slices)]
        t0 = time.perf_counter()
        forward_into(*inputs, out)
        times.append(time.perf_counter() - t0)
    return times


def summarize(batch: int, times: list[float]) -> dict:
    nps = [batch / t for t in times]
    return {
        "batch": batch,
        "runs": len(times),
        "mean_nps": batch * len(times) / sum(times),
        "median_nps": statistics.median(nps),
        "stdev_nps": statistics.stdev(nps) if len(nps) > 1 else 0.0,
        "min_nps": min(nps),
        "max_nps": max(nps),
        "mean_ms": 1000 * sum(times) / len(times),
    }


def format_table(rows: list[dict]) -> str:
    lines = [f"{'batch':>6} {'runs':>6} {'mean pos/s':>11} {'median':>9} {'stdev':>8} "
             f"{'min':>9} {'max':>9} {'mean ms':>9}"]
    for r in rows:
        lines.append(f"{r['batch']:>6} {r['runs']:>6} {r['mean_nps']:>11.1f} {r['median_nps']:>9.1f} "
                     f"{r['stdev_nps']:>8.1f} {r['min_nps']:>9.1f} {r['max_nps']:>9.1f} {r['mean_ms']:>9.3f}")
    return "\n".join(lines)


def machine_info() -> dict:
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def write_csv(path, rows: list[dict], meta: dict) -> None:
    """One row per batch size; every row also carries the run's metadata
    (the same keys as the JSON file), so one CSV file stands on its own."""
    meta_fields = list(meta)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS + meta_fields)
        writer.writeheader()
        for r in rows:
            writer.writerow({**meta, **r})


def write_json(path, rows: list[dict], meta: dict) -> None:
    with open(path, "w") as f:
        json.dump({**meta, "results": rows}, f, indent=2)
        f.write("\n")


def read_comparison(path) -> tuple[str, list[tuple[int, float]]]:
    """(label, [(batch, positions/s)]) from another run: our CSV (or any CSV
    with `batch` and `mean_nps` or `nps` columns) or a saved log of lc0's
    backendbench ("Benchmark batch size N ... - throughput X nps.")."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError as e:
        raise BenchError(f"--compare {path}: {e.strerror or e}") from None
    points = [(int(b), float(n)) for b, n in LC0_LINE.findall(text)]
    label = os.path.basename(str(path))
    if not points:
        rows = list(csv.DictReader(text.splitlines()))
        column = next((c for c in ("mean_nps", "nps") if rows and c in rows[0]), None)
        if column is None or "batch" not in rows[0]:
            raise BenchError(f"--compare {path}: neither a CSV with batch and mean_nps (or nps) "
                             "columns nor an lc0 backendbench log")
        try:
            points = [(int(r["batch"]), float(r[column])) for r in rows]
        except ValueError:
            raise BenchError(f"--compare {path}: a batch or {column} value is not a number") from None
        first = rows[0]
        if first.get("backend"):
            label = f"{first['backend']} ({label})"
    if not points:
        raise BenchError(f"--compare {path}: no measurements in it")
    return label, sorted(points)


def require_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise BenchError("--plot needs matplotlib, which is not installed "
                         "(pip install matplotlib, or the plot extra), "
                         "or leave out --plot") from None
    return plt


def plot(path, rows: list[dict], meta: dict, compare: list | None = None) -> None:
    """Positions/s over batch size: y from 0, ticks at the measured batch
    sizes (as many as fit side by side), device, net and date in the title;
    other runs overlaid."""
    plt = require_matplotlib()
    batches = [r["batch"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(batches, [r["mean_nps"] for r in rows], marker="o", label=f"{meta['backend']} (mean)")
    ax.fill_between(batches, [r["min_nps"] for r in rows], [r["max_nps"] for r in rows],
                    alpha=0.25, label=f"{meta['backend']} (min-max)")
    ticks = set(batches)
    for label, points in compare or []:
        ax.plot([b for b, _ in points], [n for _, n in points], marker="s", linestyle="--", label=label)
        ticks.update(b for b, _ in points)
    ax.set_xscale("log", base=2)
    shown = [(b, label) for b, label in zip(sorted(ticks), tick_labels(sorted(ticks))) if label]
    ax.set_xticks([b for b, _ in shown])   # ticks (and grid lines) only where a label fits
    ax.set_xticklabels([label for _, label in shown])
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("batch size")
    ax.set_ylabel("positions / s")
    ax.set_title(f"{os.path.basename(meta['net'])} on {meta['backend']}, {meta['device']}\n"
                 f"{meta['date']}", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def resolve_net(path):
    from lc0_rocm import netfiles
    try:
        return str(netfiles.resolve_weights(path))
    except netfiles.NetNotFoundError as e:
        raise BenchError(str(e)) from None


def description() -> str:
    """The help's description: the module docstring's first paragraph, whole."""
    first = (__doc__ or "").strip().split("\n\n")[0]
    return " ".join(first.split()).replace("`", "")


MAX_TICK_LABELS = 12


def tick_labels(values: list[int], max_labels: int = MAX_TICK_LABELS) -> list[str]:
    """Labels for ticks at sorted batch sizes on a log2 axis: every one when
    they fit, else the first, the last and those at least 1/max_labels of
    the axis from the previous labelled one (the rest blank), so that the
    labels never run into each other."""
    import math
    if len(values) <= max_labels:
        return [str(v) for v in values]
    logs = [math.log2(v) for v in values]
    gap = (logs[-1] - logs[0]) / max_labels
    labels, last = [], None
    for i, (v, lg) in enumerate(zip(values, logs)):
        near_end = i != len(values) - 1 and logs[-1] - lg < gap
        keep = last is None or i == len(values) - 1 or (lg - last >= gap and not near_end)
        labels.append(str(v) if keep else "")
        if keep:
            last = lg
    return labels


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lc0-rocm backendbench", description=description())
    p.add_argument("-w", "--weights", help="network file (default: the discovered net)")
    p.add_argument("-b", "--backend", default="auto", help="backend name (default: auto)")
    p.add_argument("-o", "--backend-opts", default="",
                   help="backend options in lc0's syntax, e.g. for two GPUs: --backend demux "
                        "--backend-opts 'backend=rocm-fp16,(gpu=0),(gpu=1)'")
    p.add_argument("--batches", default=DEFAULT_BATCHES,
                   help=f"comma-separated batch sizes (default: {DEFAULT_BATCHES})")
    p.add_argument("--start-batch-size", type=int,
                   help="lc0-style range instead of --batches: first batch size")
    p.add_argument("--max-batch-size", type=int, help="lc0-style range: last batch size")
    p.add_argument("--batch-step", type=int, help="lc0-style range: step (default 1)")
    p.add_argument("--seconds", type=float, default=2.0,
                   help="timed seconds per batch size (default: 2; at least 3 runs)")
    p.add_argument("--positions", type=int, default=POOL_SIZE,
                   help=f"size of the encoded position pool (default: {POOL_SIZE})")
    p.add_argument("--seed", type=int, default=0, help="seed of the random games (default: 0)")
    p.add_argument("--packed", action="store_true",
                   help="feed lc0's compact input (64-bit masks and values) through "
                        "forward_packed, as GPU backends receive it, instead of float planes")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads for numpy backends (default: 1, like lc0's eigen backend; "
                        "more threads are faster only on otherwise idle cores, and many times "
                        "slower when other processes keep the cores busy)")
    p.add_argument("--csv", metavar="FILE", help="also write the results as CSV (with the run's metadata)")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--plot", metavar="PNG", help="plot positions/s over batch size (needs matplotlib)")
    p.add_argument("--compare", metavar="FILE", action="append", default=[],
                   help="overlay another run on the plot: a CSV of ours (or with batch and nps "
                        "columns) or a saved lc0 backendbench log; repeatable")
    return p


def check_arguments(args) -> list[tuple[str, list[tuple[int, float]]]]:
    """Everything that can be checked before the (long) run: sizes, output
    files, matplotlib, the backend name. Returns --compare's runs."""
    from lc0_rocm import backends
    from lc0_rocm.outputs import OutputPathError, check_writable

    if not (math.isfinite(args.seconds) and args.seconds > 0) or args.positions < 1:
        raise BenchError("--seconds and --positions must be positive (and --seconds finite)")
    if args.threads < 1:
        raise BenchError("--threads must be >= 1")
    if args.backend not in backends.names():
        raise BenchError(f"unknown backend {args.backend!r}; known: {', '.join(backends.names())}")
    outputs = [(args.csv, "--csv"), (args.json, "--json"), (args.plot, "--plot")]
    named = [os.path.abspath(path) for path, _ in outputs if path]
    if len(set(named)) != len(named):
        raise BenchError("--csv, --json and --plot need different files")
    for path, option in outputs:
        if path:
            try:
                check_writable(path, f"{option} file")
            except OutputPathError as e:
                raise BenchError(str(e)) from None
    if args.compare and not args.plot:
        raise BenchError("--compare overlays a run on the plot: give --plot PNG too")
    if args.plot:
        require_matplotlib()
    return [read_comparison(path) for path in args.compare]


def run(args) -> list[dict]:
    from lc0_rocm import backends
    from lc0_rocm.backends import blas_threads
    from lc0_rocm.weights import load_weights

    batches = batch_sizes(args)
    compare = check_arguments(args)
    if not blas_threads.set_threads(args.threads):
        print("backendbench: cannot set BLAS threads here (no OpenBLAS found); --threads ignored",
              file=sys.stderr)
    if args.backend == "random" and not args.weights:   # needs no net: lc0's classical input
        net_path, weights = "<none>", None
    else:
        net_path = resolve_net(args.weights)
        weights = load_weights(net_path)
    from lc0_rocm.backends import options as backend_options
    backend = backends.create(args.backend, weights, **backend_options.parse(args.backend_opts))
    try:
        input_format = getattr(backend, "input_format", None) or weights.format.input
        pool = encode_pool(bench_positions(args.positions, args.seed), input_format, args.packed)
        forward_into = backend.forward_packed_into if args.packed else backend.forward_into
        info = getattr(backend, "device_info", None) or {}
        meta = {"backend": backend.name, "net": net_path, "device": info.get("name") or cpu_model(),
                "seconds": args.seconds, "positions": len(pool[0]), "packed": args.packed,
                "blas_threads": blas_threads.get_threads(), **machine_info()}
        print(f"backendbench: net {net_path}, backend {backend.name} on {meta['device']}, "
              f"{len(pool[0])} positions, batch sizes {','.join(map(str, batches))}, "
              f"~{args.seconds:g} s each, BLAS threads {meta['blas_threads']}", flush=True)
        rows = []
        for batch in batches:
            try:
                times = time_batch_size(forward_into, pool, batch, args.seconds, host_empty=backend.host_empty)
            except MemoryError:
                raise BenchError(f"not enough memory for batch size {batch}") from None
            row = summarize(batch, times)
            rows.append(row)
            print(f"Benchmark batch size {batch} with inference average time {row['mean_ms']:.3f}ms"
                  f" - throughput {row['mean_nps']:.1f} nps.", flush=True)
    finally:
        backend.close()
    print(format_table(rows))
    try:
        for path, write in ((args.csv, write_csv), (args.json, write_json)):
            if path:
                write(path, rows, meta)
                print(f"wrote {path}")
        if args.plot:
            plot(args.plot, rows, meta, compare)
            print(f"wrote {args.plot}")
    except OSError as e:   # the disk filled up or the folder went away during the run
        raise BenchError(f"cannot write {e.filename or 'the output'}: {e.strerror or e}") from None
    return rows


def main(argv=None) -> int:
    from lc0_rocm.backends.base import BackendError
    from lc0_rocm.weights import WeightsError

    args = build_parser().parse_args(argv)
    try:
        run(args)
    except (BenchError, WeightsError, BackendError) as e:
        print(f"lc0-rocm backendbench: {e}", file=sys.stderr)
        return 2
    return 0
