"""Fresh `lc0-rocm analyse` commands, whole, in turns between source trees:
each command's wall time from its process's start to its exit, and the
GPU's busy share over it (BusySampler, as analyse_bench.py samples it).
What a user's command pays and the in-process benchmarks do not: Python's
start and imports, the GPU's library and driver, counting the GPUs
(workers auto), the net's load.

    python scripts/analyse_fresh.py -w t82.pb.gz -b cuda-fp16 --nodes 100 --trees . ../base --rounds 3
    python scripts/analyse_fresh.py -b random --nodes 10 --positions 200      # CPU check

Positions: the first --positions of the London 1851 games (as
analyse_bench.py takes them), written once as rows (`FEN moves ...`, with
their history) of a FEN list. A tree is a checkout
of this project (its lc0_rocm runs, `python -m lc0_rocm`); trees alternate
within each round.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from analyse_bench import BusySampler, positions_from_pgn  # noqa: E402


def run_once(tree: pathlib.Path, fen_file: str, out: str, args) -> dict:
    shutil.rmtree(out + ".parts", ignore_errors=True)
    command = [sys.executable, "-m", "lc0_rocm", "analyse", fen_file, "-b", args.backend, "-o", out,
               "--nodes", str(args.nodes)]
    if args.weights:
        command += ["-w", str(pathlib.Path(args.weights).resolve())]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p))
    with BusySampler(args.device) as busy:
        started = time.perf_counter()
        proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: analyse failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return {"wall": wall, "busy": busy.mean}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--weights")
    p.add_argument("-b", "--backend", default="cuda-fp16")
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--positions", type=int, default=2000)
    p.add_argument("--trees", nargs="+", default=[str(ROOT)])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--device", type=int, default=0, help="the GPU sampled for the busy share")
    p.add_argument("--pgn", default=str(ROOT / "scripts" / "data" / "london-1851.pgn"))
    args = p.parse_args(argv)
    rows, _ = positions_from_pgn(args.pgn, args.positions)
    trees = [pathlib.Path(t).resolve() for t in args.trees]
    with tempfile.TemporaryDirectory() as tmp:
        fen_file = os.path.join(tmp, "positions.fen")
        pathlib.Path(fen_file).write_text("".join(row + "\n" for row in rows))
        for r in range(args.rounds):
            for k, tree in enumerate(trees):
                got = run_once(tree, fen_file, os.path.join(tmp, f"out{k}.jsonl"), args)
                busy = "n/a" if got["busy"] is None else f"{got['busy']:.1f} %"
                print(f"round {r + 1} {tree}: whole command {got['wall']:.3f} s, "
                      f"{len(rows) / got['wall']:.1f} positions/s, GPU busy {busy}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
