#!/usr/bin/env python3
"""Does the GEMM tuner choose worse algorithms on a GPU that has been idle?

A process's first backend times its half products' candidates at its first
pass (native/docs/GEMM_TUNER.md), on a GPU just woken, in replays of about
a millisecond or less; a search or analysis then runs them for seconds at the
power cap. This times, in one process:

  A  tuned first (as a fresh command's backend is), its sustained pass time;
  B  created and tuned once A's passes have heated the GPU;
  C  untuned (gemm_tune=off), for scale;

then A, B and C again in turns, all on the hot GPU, so only the choices
differ. --heat S runs S seconds of untuned passes before A is tuned.

    python3 scripts/gemm_tune_state.py -w t82.pb.gz -b cuda-fp16
    python3 scripts/gemm_tune_state.py -w t82.pb.gz -b cuda-fp16 --heat 2

Why it was written (BENCHMARKS.md, "analysis (`analyse`), H100"): a t82
analysis run as its process's first GPU use computes its passes 5-7 %
slower than the same run later in the process (H100, the muxes' call
time 12.8-13.1 ms against 12.2 ms a call of 288 rows, the GPU 98 % busy
in both), and each run creates, so tunes, its own backend.

Outcome (H100, 2026-12-07, BENCHMARKS.md, same section): B / A 0.9996,
C / A 1.037 with --heat 2: the choices do not explain it.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lc0_rocm.backendbench import bench_positions, encode_pool, time_batch_size  # noqa: E402


def pass_ms(backend, pool, batch: int, seconds: float, first: bool = False) -> float:
    """Median milliseconds a pass, timed as backendbench times a batch size
    (page-locked inputs and outputs, forward_packed_into); `first`: the
    backend's first pass alone (its tuning), no warm-up before it."""
    kwargs = {"min_runs": 1, "warmup": 0} if first else {}
    times = time_batch_size(backend.forward_packed_into, pool, batch, 0.0 if first else seconds,
                            host_empty=backend.host_empty, **kwargs)
    return 1e3 * float(np.median(times))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--weights", required=True)
    p.add_argument("-b", "--backend", default="cuda-fp16", help="a native GPU backend (cuda*, rocm*)")
    p.add_argument("--batch", type=int, default=288, help="positions a pass (288: an analysis call on an H100)")
    p.add_argument("--seconds", type=float, default=1.2, help="seconds each timing")
    p.add_argument("--rounds", type=int, default=3, help="rounds of A, B, C in turns on the hot GPU")
    p.add_argument("--heat", type=float, default=0.0, help="seconds of untuned passes before A is tuned")
    args = p.parse_args(argv)

    from lc0_rocm import backends
    from lc0_rocm.backends import native
    from lc0_rocm.weights import load_weights
    ok, reason = native.is_available(args.backend)
    if not ok:
        print(f"gemm_tune_state: {reason}", file=sys.stderr)
        return 2
    weights = load_weights(args.weights, keep_linear16=True)
    pool = encode_pool(bench_positions(args.batch, 1), weights.format.input or 1, packed=True)

    untuned = backends.create(args.backend, weights, gemm_tune="off")
    if args.heat > 0:
        count = len(time_batch_size(untuned.forward_packed_into, pool, args.batch, args.heat,
                                    host_empty=untuned.host_empty))
        print(f"heated: {count} untuned passes in {args.heat:g} s")
    a = backends.create(args.backend, weights)
    print(f"A tuned at its first pass: {pass_ms(a, pool, args.batch, 0, first=True):.1f} ms; "
          f"then {pass_ms(a, pool, args.batch, args.seconds):.3f} ms a pass", flush=True)
    b = backends.create(args.backend, weights)
    print(f"B tuned on the heated GPU: {pass_ms(b, pool, args.batch, 0, first=True):.1f} ms", flush=True)
    times: dict[str, list[float]] = {"A": [], "B": [], "C": []}
    order = [("A", a), ("B", b), ("C", untuned)]
    for r in range(args.rounds):
        for name, backend in (order if r % 2 == 0 else order[::-1]):
            times[name].append(pass_ms(backend, pool, args.batch, args.seconds))
    for name, values_ms in times.items():
        print(f"{name} hot, in turns: " + " / ".join(f"{v:.3f}" for v in values_ms) + " ms a pass")
    mean = {k: sum(v) / len(v) for k, v in times.items()}
    print(f"B / A {mean['B'] / mean['A']:.4f}, C / A {mean['C'] / mean['A']:.4f} "
          f"(batch {args.batch}, {args.seconds:g} s a timing, medians)")
    for backend in (a, b, untuned):
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
