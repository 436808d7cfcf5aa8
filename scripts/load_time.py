#!/usr/bin/env python
"""How long a net takes to load onto a backend, each way in a fresh process:

  sequential   load_weights, then backends.create (the two steps one after
               the other, as load_network did before it prepared the backend
               on a thread while reading the weights);
  overlapped   load_network (the way every command loads a net);
  inflating    the same without the net's inflated copy
               (LC0ROCM_INFLATED_NETS=0: a gzipped net inflated every time,
               as before weights.inflated; the same as overlapped for a
               plain .pb or a file under 32 MB).

Rounds alternate the three; an untimed load before them makes the copy.
The time is to a usable network (one forward of 8 positions after it is not
counted).

    python scripts/load_time.py --weights nets/t82.pb.gz --backend cuda-fp16 --rounds 2
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODES = ("sequential", "overlapped", "inflating")


def child(mode: str, weights: str, backend: str) -> None:
    sys.path.insert(0, str(ROOT))
    import chess

    from lc0_rocm import backends
    from lc0_rocm.network import Network, load_network
    from lc0_rocm.weights.loader import load_weights
    started = time.perf_counter()
    if mode == "sequential":
        w = load_weights(weights)
        read = time.perf_counter()
        net = Network(w, backends.create(backend, w))
        done = time.perf_counter()
        print(f"sequential {done - started:.3f} weights {read - started:.3f} backend {done - read:.3f}")
    else:
        net = load_network(weights, backend=backend)
        print(f"{mode} {time.perf_counter() - started:.3f}")
    net.evaluate_batch([chess.Board()] * 8)
    net.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--backend", default="auto")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child, args.weights, args.backend)
        return 0
    for r in range(-1, args.rounds):
        for mode in MODES if r >= 0 else ("overlapped",):
            env = dict(os.environ, **({"LC0ROCM_INFLATED_NETS": "0"} if mode == "inflating" else {}))
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--weights", args.weights,
                                  "--backend", args.backend], capture_output=True, text=True, env=env)
            if r < 0:
                continue
            line = next((x for x in out.stdout.splitlines() if x.startswith(mode)), None)
            print(f"round {r + 1}: {line or f'{mode} failed: ' + out.stderr.strip()[-300:]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
