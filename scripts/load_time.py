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
counted). `--engine` also times, after each overlapped load, the creation
of an Engine on it with `--set` options (its warm-up: a GPU's product
timing and its search streams' graphs up to minibatch + prefetch), what a
UCI engine adds before its first search. `--creation` instead times, in
one process after one load, the backend's creation again and again (the
part of a load after the GPU's runtime has started) and a GPU stream's
creation (what each search thread or analysis group adds).

    python scripts/load_time.py --weights nets/t82.pb.gz --backend cuda-fp16 --rounds 2
    python scripts/load_time.py --weights nets/bt4.pb.gz --backend cuda-fp16 --engine --set MinibatchSize=264
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


def child(mode: str, weights: str, backend: str, engine_options: dict | None) -> None:
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
        loaded = time.perf_counter()
        print(f"{mode} {loaded - started:.3f}")
        if mode == "overlapped" and engine_options is not None:
            from lc0_rocm.engine import Engine
            engine = Engine(net, **engine_options)
            print(f"engine {time.perf_counter() - loaded:.3f} (minibatch {engine.minibatch_size()}, "
                  f"{engine.search_threads()} search threads)")
    net.evaluate_batch([chess.Board()] * 8)
    net.close()


def creations(weights: str, backend: str, rounds: int) -> None:
    """The backend created `rounds` times from weights read once, then four
    streams (native slots) on the last one, each timed, in this process."""
    sys.path.insert(0, str(ROOT))
    from lc0_rocm import backends
    from lc0_rocm.weights.loader import load_weights
    started = time.perf_counter()
    w = load_weights(weights)
    print(f"weights read {time.perf_counter() - started:.3f} s", flush=True)
    for r in range(max(1, rounds)):
        started = time.perf_counter()
        b = backends.create(backend, w)
        print(f"creation {r + 1}: {time.perf_counter() - started:.3f} s", flush=True)
        if r + 1 < rounds:
            b.close()
    if getattr(b, "device_info", None):            # a GPU backend: its streams
        times = []
        for _ in range(4):
            started = time.perf_counter()
            b.native_slots(1)
            times.append(time.perf_counter() - started)
        print("streams: " + ", ".join(f"{1e3 * t:.1f}" for t in times) + " ms", flush=True)
    b.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", required=True)
    p.add_argument("--backend", default="auto")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--engine", action="store_true", help="also time an Engine's creation after each overlapped load")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="an Engine option (repeatable)")
    p.add_argument("--creation", action="store_true",
                   help="time the backend's creation --rounds times in one process, then its streams")
    p.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for item in args.set:
        if "=" not in item:
            p.error(f"--set wants NAME=VALUE, got {item!r}")
    if args.creation:
        creations(args.weights, args.backend, args.rounds)
        return 0
    if args.child:
        options = dict(item.split("=", 1) for item in args.set) if args.engine else None
        child(args.child, args.weights, args.backend, options)
        return 0
    for r in range(-1, args.rounds):
        for mode in MODES if r >= 0 else ("overlapped",):
            env = dict(os.environ, **({"LC0ROCM_INFLATED_NETS": "0"} if mode == "inflating" else {}))
            extra = (["--engine"] if args.engine else []) + [f"--set={item}" for item in args.set]
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--weights", args.weights,
                                  "--backend", args.backend, *extra], capture_output=True, text=True, env=env)
            if r < 0:
                continue
            line = next((x for x in out.stdout.splitlines() if x.startswith(mode)), None)
            print(f"round {r + 1}: {line or f'{mode} failed: ' + out.stderr.strip()[-300:]}", flush=True)
            engine = next((x for x in out.stdout.splitlines() if x.startswith("engine ")), None)
            if engine:
                print(f"round {r + 1}: {engine}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
