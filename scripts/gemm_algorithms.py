#!/usr/bin/env python3
"""Would a GEMM autotuner pay? cublasGemmEx's own choice against the best of
cuBLASLt's heuristic candidates, on an attention net's encoder GEMM shapes.

Builds scripts/gemm_algorithms/probe.cu with nvcc against the cuBLAS the
native library uses, then times, per shape and batch size, every candidate
inside a CUDA graph of 50 launches (as the library runs them), random data.
NVIDIA only (hipBLASLt would be the AMD counterpart).

  python3 scripts/gemm_algorithms.py --net t82 --precision fp16 --batches 1,16,64
"""
from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from lc0_rocm.backends.native import find_cublas, _which  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--net", choices=["t82", "bt4"], default="t82")
    ap.add_argument("--precision", choices=["fp16", "fp32"], default="fp16")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--workspace-kb", type=int, default=32 << 10,
                    help="workspace both APIs may use (the library's: 32 MB; 0: none)")
    args = ap.parse_args()
    nvcc = _which("nvcc", ["/usr/local/cuda/bin"])
    if nvcc is None:
        print("gemm_algorithms: nvcc not found", file=sys.stderr)
        return 2
    inc, lib, _ = find_cublas(nvcc)
    libs = sorted(pathlib.Path(lib).iterdir())
    lt = next(p.name for p in libs if p.name.startswith("libcublasLt.so"))
    blas = next(p.name for p in libs if p.name.startswith("libcublas.so"))
    source = pathlib.Path(__file__).resolve().parent / "gemm_algorithms" / "probe.cu"
    with tempfile.TemporaryDirectory() as tmp:
        exe = pathlib.Path(tmp) / "probe"
        subprocess.run([nvcc, "-O2", f"-arch={args.arch}", f"-I{inc}", str(source), "-o", str(exe),
                        f"-L{lib}", f"-l:{lt}", f"-l:{blas}", "-Xlinker", f"-rpath={lib}"], check=True)
        return subprocess.run([str(exe), args.net, args.precision, args.batches,
                               str(args.workspace_kb)]).returncode


if __name__ == "__main__":
    sys.exit(main())
