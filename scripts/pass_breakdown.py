#!/usr/bin/env python3
"""Where a forward call's time goes at one batch size on the GPU: wall time
per call (pinned inputs and outputs, as backendbench), then per pass the GPU
span (first operation's start to the last one's end), kernel busy time,
copies, memsets, the idle gaps between operations, and which kernels follow
the memsets (cuBLAS's cooperative kernels need theirs; native/docs/GEMM_TUNER.md).

    python3 scripts/pass_breakdown.py --weights t82.pb.gz --backend cuda-fp16 --batch 256

Needs PyTorch (its profiler records every GPU operation of the process
through CUPTI, ours too) and a GPU.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time


def kind(name: str) -> str:
    low = name.lower()
    return "copy" if "memcpy" in low else "memset" if "memset" in low else "kernel"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-w", "--weights", required=True)
    parser.add_argument("-b", "--backend", default="cuda-fp16")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--calls", type=int, default=60, help="timed calls for the wall time")
    parser.add_argument("--passes", type=int, default=10, help="profiled passes")
    args = parser.parse_args(argv)
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("pass_breakdown: needs PyTorch (pip install torch)", file=sys.stderr)
        return 2
    from lc0_rocm import backends
    from lc0_rocm.backendbench import bench_positions, encode_pool
    from lc0_rocm.weights import load_weights

    torch.zeros(1, device="cuda")  # one CUDA context, shared with the library
    weights = load_weights(args.weights)
    n = args.batch
    masks, values = encode_pool(bench_positions(n, 0), weights.format.input, packed=True)
    backend = backends.create(args.backend, weights, max_batch=n)
    try:
        m, v = backend.host_empty(masks[:n].shape, masks.dtype), backend.host_empty(values[:n].shape, values.dtype)
        m[:], v[:] = masks[:n], values[:n]
        out = (backend.host_empty((n, 1858)), backend.host_empty((n, 3)), backend.host_empty(n))
        for _ in range(5):  # plain first pass, capture, replays
            backend.forward_packed_into(m, v, out)
        wall = []
        for _ in range(args.calls):
            t0 = time.perf_counter()
            backend.forward_packed_into(m, v, out)
            wall.append(time.perf_counter() - t0)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.passes):
                backend.forward_packed_into(m, v, out)
                torch.cuda.synchronize()
    finally:
        backend.close()
    events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    passes, current = [], [events[0]]
    for e in events[1:]:  # a pass starts with its input copies
        if "HtoD" in e.name and "HtoD" not in current[-1].name:
            passes.append(current)
            current = []
        current.append(e)
    passes.append(current)
    rows = collections.defaultdict(list)
    after_memset = collections.Counter()
    for ops in passes:
        first_kernel = next(i for i, e in enumerate(ops) if kind(e.name) == "kernel")
        body = ops[first_kernel:]  # from the first kernel: the gap before it is the host's launch
        rows["span"].append(max(e.time_range.end for e in ops) - ops[0].time_range.start)
        for k in ("kernel", "copy", "memset"):
            rows[k].append(sum(e.time_range.end - e.time_range.start for e in ops if kind(e.name) == k))
        rows["memsets"].append(sum(1 for e in ops if kind(e.name) == "memset"))
        rows["operations"].append(len(ops))
        end, gaps = body[0].time_range.end, 0.0
        for a, b in zip(body, body[1:]):
            gaps += max(0.0, b.time_range.start - end)
            end = max(end, b.time_range.end)
            if kind(a.name) == "memset":
                after_memset[b.name[:80]] += 1
        rows["gaps"].append(gaps)
    med = {k: statistics.median(x) for k, x in rows.items()}
    print(f"{args.weights} {args.backend} batch {n}: wall {statistics.median(wall) * 1e6:,.0f} us per call; "
          f"per pass (median of {len(passes)}): span {med['span']:,.0f} us, kernels {med['kernel']:,.0f}, "
          f"copies {med['copy']:,.0f}, memsets {med['memset']:,.0f} ({med['memsets']:.0f}), idle gaps after the "
          f"first kernel {med['gaps']:,.0f}, operations {med['operations']:.0f}")
    for name, count in after_memset.most_common(6):
        print(f"  after a memset: {count / len(passes):.0f} a pass  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
