#!/usr/bin/env python3
"""GPU time per kernel of the native backend's forward pass, at several batch
sizes side by side: which kernels cost a fixed time per call whatever the
batch (latency-bound: the small-batch targets) and which scale.

    python3 scripts/kernel_profile.py --weights t82.pb.gz --backend cuda-fp16 --batches 1,16,128 \
        [--backend-opts disable=sm90_gemm]

Needs PyTorch (its profiler records every kernel of the process through
CUPTI, ours too) and a GPU. Per batch size: total kernel time per pass and
per position; then per kernel name the time per pass at each batch size and
how many launches one pass makes, largest first. Kernels that run at only
some batch sizes (cuBLAS picks its kernels by shape) show 0 at the others.
"""
from __future__ import annotations

import argparse
import collections
import sys


def kernel_times(backend, masks, values, batches, passes: int = 5):
    """GPU kernel time by kernel name over `passes` forward passes of the
    first `batch` rows of (masks, values), per batch size: (us per pass,
    launches per pass), each a dict name -> batch -> value. Needs PyTorch
    (ImportError otherwise) and a CUDA context."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    per_pass: dict[str, dict[int, float]] = collections.defaultdict(dict)
    launches: dict[str, dict[int, int]] = collections.defaultdict(dict)
    for batch in batches:
        m, v = masks[:batch], values[:batch]
        for _ in range(3):                 # warm-up: arena growth, graph capture
            backend.forward_packed(m, v)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(passes):
                backend.forward_packed(m, v)
                torch.cuda.synchronize()
        counts: dict[str, int] = collections.Counter()
        for event in prof.events():
            if event.device_type != torch.autograd.DeviceType.CUDA:
                continue
            us = (event.time_range.end - event.time_range.start) / passes
            per_pass[event.name][batch] = per_pass[event.name].get(batch, 0.0) + us
            counts[event.name] += 1
        for name, count in counts.items():
            launches[name][batch] = count // passes
    return per_pass, launches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-w", "--weights", required=True)
    parser.add_argument("-b", "--backend", default="cuda-fp16")
    parser.add_argument("-o", "--backend-opts", default="",
                        help="the backend's options in lc0's syntax, e.g. disable=qkv_attention/sm90_gemm")
    parser.add_argument("--batches", default="1,16,128")
    parser.add_argument("--passes", type=int, default=5, help="profiled passes per batch size")
    parser.add_argument("--top", type=int, default=25, help="kernel names shown")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("kernel_profile: needs PyTorch (pip install torch)", file=sys.stderr)
        return 2
    from lc0_rocm import backends
    from lc0_rocm.backendbench import bench_positions, encode_pool
    from lc0_rocm.backends import options
    from lc0_rocm.weights import load_weights

    batches = [int(b) for b in args.batches.split(",")]
    torch.zeros(1, device="cuda")          # one CUDA context, shared with the library
    weights = load_weights(args.weights)
    masks, values = encode_pool(bench_positions(max(batches), 0), weights.format.input, packed=True)
    backend = backends.create(args.backend, weights, **options.parse(args.backend_opts))
    try:
        per_pass, launches = kernel_times(backend, masks, values, batches, args.passes)
    finally:
        backend.close()
    totals = {b: sum(r.get(b, 0.0) for r in per_pass.values()) for b in batches}
    print(f"{args.weights} {args.backend}, kernel time per pass (us):")
    print("  " + "  ".join(f"b{b} {totals[b]:,.0f} ({totals[b] / b:,.2f} per position)" for b in batches))
    print("  " + " ".join(f"{'b' + str(b):>9}" for b in batches) + "  launches  kernel")
    rows = sorted(per_pass.items(), key=lambda kv: -max(kv[1].values()))
    for name, times in rows[:args.top]:
        count = max(launches[name].values())
        print("  " + " ".join(f"{times.get(b, 0.0):9.1f}" for b in batches) + f"  {count:8d}  {name[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
