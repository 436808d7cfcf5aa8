#!/usr/bin/env python
"""Forward calls from several threads at once: T threads, each on a stream of
its own (the backend's pool), call forward_packed_into at batch B back to
back for a few seconds, on page-locked buffers as analysis's muxes do.
Prints rows/s, the wall time of a call and, from the GPU library's pass log,
the mean pass time and the share of the wall time some pass ran.

    python scripts/forward_threads.py -w maia-1900.pb.gz -b cuda-fp16 --batch 128 --threads 1,2,4,8
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import threading
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm.network import load_network  # noqa: E402


def buffers(backend, batch: int, rng: np.random.Generator):
    masks = backend.host_empty((batch, 112), np.uint64)
    values = backend.host_empty((batch, 112), np.float32)
    masks[:] = 0
    values[:] = 0
    masks[:, :12] = rng.integers(1, 1 << 62, (batch, 12), dtype=np.uint64)   # pieces on random squares
    out = (backend.host_empty((batch, 1858)), backend.host_empty((batch, 3)), backend.host_empty((batch,)))
    return masks, values, out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--weights", required=True)
    p.add_argument("-b", "--backend", default="cuda-fp16")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", default="1,2,4,8", help="comma list")
    p.add_argument("--seconds", type=float, default=1.5)
    args = p.parse_args(argv)
    backend = load_network(args.weights, backend=args.backend).backend
    if not hasattr(backend, "pass_log_start"):
        p.error(f"backend {args.backend} has no pass log (a GPU backend is needed)")
    rng = np.random.default_rng(0)
    for threads in (int(t) for t in args.threads.split(",")):
        bufs = [buffers(backend, args.batch, rng) for _ in range(threads)]
        for masks, values, out in bufs:                   # each stream's first call (graphs) untimed
            backend.forward_packed_into(masks, values, out)
        calls, spent = [0] * threads, [0.0] * threads
        stop = time.perf_counter() + args.seconds

        def loop(i):
            masks, values, out = bufs[i]
            while time.perf_counter() < stop:
                t = time.perf_counter()
                backend.forward_packed_into(masks, values, out)
                spent[i] += time.perf_counter() - t
                calls[i] += 1

        backend.pass_log_start()
        started = time.perf_counter()
        workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - started
        log = backend.pass_log()
        n = sum(calls)
        print(f"batch {args.batch} threads {threads}: {n} calls, {n * args.batch / wall:,.0f} rows/s, "
              f"{1e3 * sum(spent) / n:.3f} ms a call, passes {log.summed_ms() / max(1, len(log)):.3f} ms, "
              f"GPU busy {100 * log.busy_ms() / 1e3 / wall:.0f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
