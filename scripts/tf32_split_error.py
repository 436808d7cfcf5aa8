#!/usr/bin/env python3
"""How precise are float products as split tf32 (native/docs/TF32_SPLIT.md)?

    python3 scripts/tf32_split_error.py --gemm
    python3 scripts/tf32_split_error.py --net t82.pb.gz [--backend cuda] [--positions 64]

--gemm (needs PyTorch and an NVIDIA GPU): random products of the encoder
GEMM shapes, relative Frobenius error against float64 of a float GEMM, of
plain tf32, and of the split product in the orders tried (small terms last,
small terms first, three GEMMs) - tf32 on the tensor cores through torch,
the split done here as the library does it.

--net: the whole net on the GPU backend with float GEMMs
(disable=tf32_split) and with every product split (force=tf32_split), each against
the cpu backend on the same positions: relative error of policy, WDL and
moves left.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

GEMM_SHAPES = [(16384, 768, 768), (16384, 768, 1024), (4096, 2304, 768), (256, 256, 2048)]  # M, N, K


def gemm_errors() -> None:
    import torch

    def head(x):
        u = x.view(torch.int32)
        u = (u + 0xfff + ((u >> 13) & 1)) & ~0x1fff
        return u.view(torch.float32)

    def rel(a, ref):
        return float((a.double() - ref).norm() / ref.norm())

    torch.manual_seed(0)
    for m, n, k in GEMM_SHAPES:
        a = torch.randn(m, k, device="cuda")
        w = torch.randn(n, k, device="cuda") / k ** 0.5
        ref = a.double() @ w.double().T
        torch.backends.cuda.matmul.allow_tf32 = False
        plain = a @ w.T
        torch.backends.cuda.matmul.allow_tf32 = True
        ah, wh = head(a), head(w)
        ar, wr = a - ah, w - wh
        last = torch.cat([ah, ar, ah], 1) @ torch.cat([wh, wh, wr], 1).T
        first = torch.cat([ar, ah, ah], 1) @ torch.cat([wh, wr, wh], 1).T  # the library's order
        three = (ar @ wh.T + ah @ wr.T) + ah @ wh.T
        tf32 = a @ w.T
        print(f"M {m} N {n} K {k}: float {rel(plain, ref):.2e}  split, small terms last {rel(last, ref):.2e}"
              f"  split, small first {rel(first, ref):.2e}  three GEMMs {rel(three, ref):.2e}"
              f"  plain tf32 {rel(tf32, ref):.2e}")


def net_errors(path: str, backend: str, positions: int) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from gpu_paths import random_packed

    from lc0_rocm import backends
    from lc0_rocm.weights import load_weights

    w = load_weights(path)
    masks, values = random_packed(w, positions)
    ref = backends.create("cpu", w).forward_packed(masks, values)
    for option, label in (("disable", "float GEMMs"), ("force", "every product split")):
        b = backends.create(backend, w, max_batch=positions, **{option: "tf32_split"})
        try:
            got = b.forward_packed(masks, values)
            path_taken = b.describe(positions)
        finally:
            b.close()
        errs = [float(np.linalg.norm(g.astype(np.float64) - r) / np.linalg.norm(r)) for g, r in zip(got, ref)]
        print(f"{path} {label}: policy {errs[0]:.2e} wdl {errs[1]:.2e} moves left {errs[2]:.2e}  ({path_taken})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gemm", action="store_true", help="GEMM shapes through torch")
    p.add_argument("--net", help="a net file: end-to-end error, split off and on")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--positions", type=int, default=64)
    args = p.parse_args()
    if not args.gemm and not args.net:
        p.error("give --gemm and/or --net")
    if args.gemm:
        gemm_errors()
    if args.net:
        net_errors(args.net, args.backend, args.positions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
