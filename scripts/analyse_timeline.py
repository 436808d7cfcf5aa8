#!/usr/bin/env python
"""Where an `analyse` run's wall time goes outside its searching stage: the
run in this process (as `lc0-rocm analyse` with one worker runs it), its
steps timed by wrapping them, printed as a timeline from the run's start.

    python scripts/analyse_timeline.py -w t82.pb.gz -b cuda-fp16 --positions 2000 --nodes 100
    python scripts/analyse_timeline.py -b random --positions 200 --nodes 20      # CPU check

Positions: every position of the London 1851 games in order, as
scripts/analyse_bench.py takes them. Steps shown: reading and planning
the inputs, the net's load (its weights read, the backend prepared and
created), the searches' creation, the muxes' searching stage (from their
own figures), closing the searches, writing the outputs.
"""
from __future__ import annotations

import argparse
import functools
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from analyse_bench import positions_from_pgn  # noqa: E402

from lc0_rocm import backends, network  # noqa: E402
from lc0_rocm.analysis import many, runner, writers  # noqa: E402
from lc0_rocm.analysis.settings import NetSource, Settings  # noqa: E402

STEPS: list[tuple[str, float, float]] = []
START = [0.0]


def timed(owner, name: str, label: str, once: bool = False) -> None:
    """Record each call of owner.name as (label, start, end) from START
    (`once`: only a run's first, for a method called again to no effect)."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        begun = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            if not (once and any(step[0] == label for step in STEPS)):
                STEPS.append((label, begun - START[0], time.perf_counter() - START[0]))
    setattr(owner, name, wrapper)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--weights", default=None)
    p.add_argument("-b", "--backend", default="auto")
    p.add_argument("--backend-opts", default="")
    p.add_argument("--positions", type=int, default=2000)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--rounds", type=int, default=1, help="runs one after another in this process")
    p.add_argument("--pgn", default=str(ROOT / "scripts" / "data" / "london-1851.pgn"))
    args = p.parse_args(argv)
    rows, _ = positions_from_pgn(args.pgn, args.positions)
    timed(runner, "build_plan", "inputs read and planned")
    timed(network, "load_weights", "weights read")
    timed(backends, "create", "backend created")
    timed(NetSource, "load", "net loaded (whole)")
    timed(many.ManySearch, "__init__", "searches created")
    timed(many.ManySearch, "close", "searches closed", once=True)
    timed(writers, "write_outputs", "outputs written")
    with tempfile.TemporaryDirectory() as folder, open(os.devnull, "w") as quiet:
        path = pathlib.Path(folder) / "positions.fen"
        path.write_text("\n".join(rows) + "\n")
        for r in range(args.rounds):
            STEPS.clear()
            out = pathlib.Path(folder) / f"out{r}.jsonl"
            START[0] = time.perf_counter()
            result = runner.run([str(path)], [str(out)], Settings("search", nodes=args.nodes),
                                NetSource(args.weights, args.backend, args.backend_opts), workers=1,
                                stream=quiet)
            wall = time.perf_counter() - START[0]
            searching = max((m["wall_s"] for m in result.mux), default=0.0)
            print(f"round {r + 1}: {len(rows)} positions, {args.nodes} nodes, whole {wall:.3f} s, "
                  f"searching stage {searching:.3f} s ({100 * searching / wall:.1f} % of the whole)")
            for label, begun, ended in sorted(STEPS, key=lambda s: s[1]):
                print(f"  {begun:7.3f} -> {ended:7.3f} s ({ended - begun:6.3f})  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
