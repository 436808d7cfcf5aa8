#!/usr/bin/env python3
"""Per-kernel GPU time of one attention net's forward pass (device machine).

Runs a generated net (default t82) through the native backend a few times
under PyTorch's profiler, which records every kernel of the process through
CUPTI (ours and cuBLAS's alike), and prints the kernels by total GPU time.
Needs PyTorch with CUDA; used to find what to speed up, not as a benchmark.

    python3 scripts/profile_attention.py --preset t82 --backend cuda-fp16 --batch 256
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="t82")
    p.add_argument("--backend", default="cuda-fp16")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rows", type=int, default=25, help="kernels to list")
    args = p.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    from lc0_rocm import backends
    from lc0_rocm.makenet import make_net
    from lc0_rocm.weights import load_weights

    torch.cuda.init()
    with tempfile.TemporaryDirectory() as tmp:
        weights = load_weights(make_net(args.preset, pathlib.Path(tmp) / "net.pb.gz", seed=1))
    backend = backends.create(args.backend, weights, max_batch=args.batch)
    rng = np.random.default_rng(0)
    planes = (rng.random((args.batch, 112, 8, 8)) < 0.06).astype(np.float32)
    for _ in range(3):
        backend.forward(planes)
    t0 = time.perf_counter()
    for _ in range(args.runs):
        backend.forward(planes)
    wall = (time.perf_counter() - t0) / args.runs
    print(f"{args.preset} {args.backend} batch {args.batch}: {wall * 1e3:.2f} ms per pass, "
          f"{args.batch / wall:.0f} pos/s (no profiler)")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.runs):
            backend.forward(planes)
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(e.device_time_total for e in events)
    print(f"GPU time per pass {total / args.runs / 1e3:.2f} ms over {len(events)} kernel kinds")
    for e in sorted(events, key=lambda e: -e.device_time_total)[:args.rows]:
        print(f"  {e.device_time_total / args.runs / 1e3:7.3f} ms {100 * e.device_time_total / total:5.1f}% "
              f"x{e.count // args.runs:4d}  {e.key[:110]}")
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
