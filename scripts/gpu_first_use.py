#!/usr/bin/env python3
"""A process's first use of the GPU, step by step: importing the GPU
backend, finding its library, loading it (cuBLAS and the runtime with it),
starting the runtime, reading the net, creating the backend, the first
passes, and a second backend's creation; each step's end in seconds from
the script's start. What a fresh `lc0-rocm` command pays once and a
process that has used the GPU does not (BENCHMARKS.md, "analysis
(`analyse`), H100"). Run it in a fresh process each time:

    python3 scripts/gpu_first_use.py -w t82.pb.gz -b cuda-fp16
    CUDA_MODULE_LOADING=EAGER python3 scripts/gpu_first_use.py -w maia-1900.pb.gz

Needs a usable GPU backend and its library built (`lc0-rocm build-native`).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

T0 = time.perf_counter()
ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def mark(what: str) -> None:
    print(f"{time.perf_counter() - T0:7.3f} s  {what}", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-w", "--weights", required=True)
    p.add_argument("-b", "--backend", default="cuda-fp16", help="a native GPU backend (rocm*, cuda*)")
    p.add_argument("--batch", type=int, default=128, help="positions in each of the three timed passes")
    args = p.parse_args(argv)

    from lc0_rocm.backends import native, native_build
    mark("GPU backend imported")
    vendor, _ = native.split_name(args.backend)
    ok, reason = native.is_available(args.backend)
    if not ok:
        print(f"gpu_first_use: {reason}", file=sys.stderr)
        return 2
    library = native_build.cached_library(vendor, None)
    if library is None:
        print("gpu_first_use: the GPU library is not built: run `lc0-rocm build-native` first", file=sys.stderr)
        return 2
    mark(f"library found ({library}, {os.path.getsize(library) / 1e6:.0f} MB)")
    native._link_without_gil(str(library))
    mark("library loaded (dlopen)")
    ffi, lib = native.load_library(library)
    count = ffi.new("int*")
    native.check(ffi, lib, lib.lc0rocm_get_device_count(count), "device count")
    mark(f"runtime started ({count[0]} GPU(s))")

    from lc0_rocm import backends, encoder
    from lc0_rocm.backendbench import bench_positions
    from lc0_rocm.weights import load_weights
    weights = load_weights(args.weights, keep_linear16=True)
    mark("weights read")
    backend = backends.create(args.backend, weights)
    mark("backend created")
    masks, values, _ = encoder.encode_batch_packed(bench_positions(args.batch, 1), weights.format.input or 1)
    mark(f"{args.batch} positions encoded")
    for i in range(3):
        backend.forward_packed(masks, values)
        mark(f"pass {i + 1}")
    second = backends.create(args.backend, weights)
    mark("a second backend created")
    second.close()
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
