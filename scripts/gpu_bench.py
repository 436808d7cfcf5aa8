#!/usr/bin/env python3
"""Native GPU backend against lc0: build + parity + throughput, one process tree.

    python3 scripts/gpu_bench.py --out DIR [--nets maia-1900,t82,bt4] [--lc0 PATH] [--net-dir nets]

Steps, each reported even when an earlier one failed:
  1. build the native library;
  2. parity against the numpy `cpu` backend (scripts/gpu_check.py's check:
     outputs NaN-poisoned, batches 1..1024, plain / graph-captured / replayed)
     for --parity-nets, under every --variants entry;
  3. our throughput, positions/s per net, precision, variant and input mode
     (backendbench's timing: mean over >= 3 runs after 2 warm-up runs):
       packed  - positions of varied random games, lc0's packed input, as the
                 search feeds the backend;
       lc0-way - one position repeated, full float planes, as
                 `lc0 backendbench` measures;
  4. with --lc0 PATH: `lc0 backendbench` on the same nets and batch sizes;
  5. the compute ceiling (NVIDIA sm_90, where t82 or bt4 is timed in fp16):
     this GPU's fp16 matrix rate, measured as issue 9 measured the ~770-790
     TFLOP/s its ceilings assume (the best of three bursts of 8192^3 cuBLAS
     products from rest, native/bench/matrix_rate_bench.cu, taken after the
     build and before the other steps, while the GPU is cool), over the net's
     encoder FLOP a position; and our batch-512 figures as a fraction of it
     (issue 9 asks >= 60 %);
  6. DIR/gpu_bench.csv, DIR/gpu_bench.md (tables, with ours / lc0, and the
     ceiling), DIR/gpu_bench_ceiling.json and DIR/gpu_bench.png (positions/s
     over batch size, both engines). Without --lc0, lc0's figures are
     docs/gpu-runs/lc0_master_h100_reference.csv (lc0 master on a lent H100,
     from issue 9), labelled as reference data.
Variants (the GPU backend's options, lc0_rocm/backends/native.py's OPTIONS):
default, fused-se / unfused-se (force=fused_se / disable=fused_se: the fused
SE kernel at any width / never), no-graphs (graphs=off).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

OURS = "lc0-rocm"
REFERENCE_CSV = ROOT / "docs" / "gpu-runs" / "lc0_master_h100_reference.csv"
VARIANTS = {"default": {}, "fused-se": {"force": "fused_se"}, "unfused-se": {"disable": "fused_se"},
            "no-graphs": {"graphs": "off"}}
MODES = ("packed", "lc0-way")
FIELDS = ["engine", "net", "precision", "variant", "mode", "batch", "nps", "source"]
LC0_LINE = re.compile(r"Benchmark batch size (\d+) .*throughput ([0-9.]+) nps")
MATRIX_RATE_LINE = re.compile(r"fp16 matrix rate ([0-9.]+) TFLOP/s")
CEILING_BATCH = 512  # issue 9: at batch 512, at least 60 % of the compute ceiling
CEILING_SHARE = 0.60


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- lc0
def parse_lc0_output(text: str) -> dict[int, float]:
    """{batch: positions/s} from `lc0 backendbench` output."""
    return {int(m.group(1)): float(m.group(2)) for m in LC0_LINE.finditer(text)}


def lc0_command(lc0: str, backend: str, net: pathlib.Path, batch: int, runs: int) -> list[str]:
    return [lc0, "backendbench", f"--backend={backend}", f"--weights={net}",
            f"--start-batch-size={batch}", f"--max-batch-size={batch}", f"--batches={runs}"]


def bench_lc0(lc0: str, backend: str, net: pathlib.Path, batches, runs: int) -> dict[int, float]:
    found = {}
    for b in batches:
        r = subprocess.run(lc0_command(lc0, backend, net, b, runs), capture_output=True, text=True,
                           timeout=600)
        got = parse_lc0_output(r.stdout + r.stderr)
        if b not in got:
            raise RuntimeError(f"lc0 backendbench at batch {b} printed no result (rc {r.returncode}): "
                               f"{(r.stdout + r.stderr)[-500:]}")
        found[b] = got[b]
    return found


def reference_rows(path: pathlib.Path = REFERENCE_CSV) -> list[dict]:
    """lc0 master's figures from the reference CSV, as result rows."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["engine"] != "lc0 master":
                continue
            rows.append(dict(engine="lc0 master (reference)", net=r["net"], precision=r["precision"],
                             variant="", mode="lc0-way", batch=int(r["batch"]), nps=float(r["nps"]),
                             source=r["source"]))
    return rows


# ---------------------------------------------------------------- ours
def bench_ours(weights, backend_name: str, batches, seconds: float, mode: str,
               options: dict | None = None) -> dict[int, float]:
    from lc0_rocm import backends
    from lc0_rocm.backendbench import bench_positions, encode_pool, summarize, time_batch_size
    one_position = mode == "lc0-way"
    boards = bench_positions(1 if one_position else 512, seed=0)
    pool = encode_pool(boards, weights.format.input, packed=not one_position)
    be = backends.create(backend_name, weights, max_batch=max(batches), **(options or {}))
    try:
        forward_into = be.forward_into if one_position else be.forward_packed_into
        return {b: summarize(b, time_batch_size(forward_into, pool, b, seconds, host_empty=be.host_empty))["mean_nps"]
                for b in batches}
    finally:
        be.close()


# ---------------------------------------------------------------- the compute ceiling
def ceiling_shapes() -> dict:
    """The attention presets issue 9 sets ceilings for, by name."""
    from lc0_rocm.makenet.attention import BT4, T82
    return {"t82": T82, "bt4": BT4}


def matrix_rate_tflops() -> float | None:
    """This GPU's fp16 matrix rate (TFLOP/s: the best of three bursts of
    8192^3 products from rest), or None where it could not be measured (no
    sm_90 GPU, no compile)."""
    import bench_program
    status, output = bench_program.build_and_read("matrix_rate_bench", ["8192", "20", "3"], with_blas=True)
    found = MATRIX_RATE_LINE.search(output)
    return float(found.group(1)) if status == 0 and found else None


def ours_fp16(rows: list[dict], net: str) -> list[dict]:
    """Our default-variant fp16 rows of `net`: the figures a ceiling is for."""
    return [r for r in rows if r["engine"] == OURS and r["net"] == net and r["precision"] == "fp16"
            and r["variant"] == "default"]


def ceilings(rows: list[dict], tflops: float) -> list[dict]:
    """Per ceiling net among our fp16 rows: its encoder GFLOP a position, the
    ceiling in positions/s at `tflops`, and each default-variant mode's
    batch-512 figure as a fraction of it (none where batch 512 was not timed)."""
    found = []
    for net, shape in ceiling_shapes().items():
        ours = ours_fp16(rows, net)
        if not ours:
            continue
        flop = shape.encoder_flop_per_position()
        ceiling = tflops * 1e12 / flop
        at_batch = {r["mode"]: r["nps"] for r in ours if r["batch"] == CEILING_BATCH}
        found.append(dict(net=net, tflops=tflops, gflop_per_position=flop / 1e9, ceiling_nps=ceiling,
                          target_nps=CEILING_SHARE * ceiling, batch=CEILING_BATCH,
                          fraction={mode: nps / ceiling for mode, nps in at_batch.items()}))
    return found


def fractions_text(ceiling: dict) -> str:
    """'packed 60.2%, lc0-way 59.5%', or 'not timed'."""
    return ", ".join(f"{mode} {share:.1%}" for mode, share in ceiling["fraction"].items()) or "not timed"


def ceiling_markdown(found: list[dict]) -> str:
    """The ceiling section of gpu_bench.md (empty without a ceiling)."""
    if not found:
        return ""
    lines = ["", "### the compute ceiling on this GPU", "",
             f"fp16 matrix rate: {found[0]['tflops']:,.1f} TFLOP/s (the best of three bursts of 8192^3 cuBLAS "
             "products from rest, float sums, before the other steps: how issue 9 measured the ~770-790 TFLOP/s "
             "its ceilings assume). Ceiling = that rate "
             "over the net's encoder FLOP a position (embedding and heads left out: the ceiling errs high).", "",
             f"| net | GFLOP a position | ceiling, positions/s | {CEILING_SHARE:.0%} of it | "
             f"ours at b{CEILING_BATCH} / ceiling |", "|---|---:|---:|---:|---|"]
    for c in found:
        lines.append(f"| {c['net']} | {c['gflop_per_position']:.2f} | {c['ceiling_nps']:,.0f} | "
                     f"{c['target_nps']:,.0f} | {fractions_text(c)} |")
    return "\n".join(lines + [""])


# ---------------------------------------------------------------- reports
def write_csv(path: pathlib.Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def markdown(rows: list[dict], batches) -> str:
    """One table per (net, precision): a row per engine/variant/mode, then
    ours / lc0 for each of our rows where lc0 has the batch size."""
    lines = []
    groups = sorted({(r["net"], r["precision"]) for r in rows})
    for net, prec in groups:
        grp = [r for r in rows if r["net"] == net and r["precision"] == prec]
        labels = list(dict.fromkeys(label(r) for r in grp))
        by = {(label(r), r["batch"]): r["nps"] for r in grp}
        lc0 = next((label(r) for r in grp if r["engine"] != OURS), None)
        lines += [f"### {net} {prec}", "", "| | " + " | ".join(str(b) for b in batches) + " |",
                  "|---|" + "---:|" * len(batches)]
        for lab in labels:
            lines.append(f"| {lab} | " + " | ".join(
                f"{by[(lab, b)]:,.0f}" if (lab, b) in by else "" for b in batches) + " |")
        if lc0:
            for lab in labels:
                if lab == lc0:
                    continue
                lines.append(f"| {lab} / {lc0} | " + " | ".join(
                    f"{by[(lab, b)] / by[(lc0, b)]:.2f}" if (lab, b) in by and (lc0, b) in by else ""
                    for b in batches) + " |")
        lines.append("")
    return "\n".join(lines)


def label(r: dict) -> str:
    if r["engine"] != OURS:  # lc0, measured or reference
        return r["engine"]
    return f"{r['engine']} {r['variant']} {r['mode']}".strip()


def plot(path: pathlib.Path, rows: list[dict]) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("  matplotlib not installed: no PNG")
        return False
    groups = sorted({(r["net"], r["precision"]) for r in rows if r["engine"] == OURS})
    if not groups:
        return False
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (net, prec) in zip(axes[0], groups):
        grp = [r for r in rows if r["net"] == net and r["precision"] == prec]
        for lab, ours in dict.fromkeys((label(r), r["engine"] == OURS) for r in grp):
            pts = sorted((r["batch"], r["nps"]) for r in grp if label(r) == lab)
            style = "-" if ours else "--"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", label=lab)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("positions / s")
        ax.set_title(f"{net} {prec}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for the CSV, markdown and PNG")
    p.add_argument("--vendor", default="cuda", choices=["cuda", "rocm"])
    p.add_argument("--nets", default="maia-1900,t82,bt4", help="nets to time (presets or maia-1900)")
    p.add_argument("--precisions", default="fp16,fp32")
    p.add_argument("--batches", default="1,16,64,256,512")
    p.add_argument("--variants", default="default", help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--modes", default=",".join(MODES), help="comma list of packed, lc0-way")
    p.add_argument("--seconds", type=float, default=0.5, help="timed seconds per batch size")
    p.add_argument("--parity-nets", default="maia-1900,tiny-resnet,tiny-resnet-classical,"
                   "tiny-resnet-mish,tiny-resnet-attnpolicy,resnet-se")
    p.add_argument("--parity-batches", default="1,7,64,256,1024")
    p.add_argument("--bench-variants-nets", default="maia-1900,resnet-se",
                   help="nets timed under every variant (the others: default only)")
    p.add_argument("--lc0", help="lc0 binary: time it too (else overlay the reference CSV)")
    p.add_argument("--lc0-backend", default="cuda-fp16", help="lc0's backend for fp16 (fp32: 'cuda')")
    p.add_argument("--lc0-runs", type=int, default=60, help="lc0 backendbench --batches")
    p.add_argument("--skip", default="", help="comma list of steps to skip: parity,bench,lc0,ceiling")
    p.add_argument("--net-dir", type=pathlib.Path,
                   help="folder of NAME.pb.gz files to use instead of drawing those presets again")
    args = p.parse_args(argv)

    import gpu_check  # noqa: E402  (scripts/): parity, packed inputs, net files
    from lc0_rocm.backendbench import bench_positions
    from lc0_rocm.backends import native
    from lc0_rocm.weights import load_weights

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        p.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    batches = [int(b) for b in args.batches.split(",")]
    rows: list[dict] = []
    checks: list[dict] = []
    t_start = time.perf_counter()

    log("== build")
    try:
        lib = native.build()
        ffi, clib = native.load_library(lib)
        device = native.device_info(ffi, clib, 0)
        log(f"  {lib}; device {device}")
    except Exception as e:  # noqa: BLE001
        log(f"  build failed: {e}")
        return 1

    tflops = None
    nets = args.nets.split(",")
    if ("ceiling" not in skip and "bench" not in skip and args.vendor == "cuda" and "fp16" in args.precisions.split(",")
            and any(n in nets for n in ceiling_shapes())):
        log("== the fp16 matrix rate (for the compute ceiling; first, while the GPU is cool)")
        tflops = matrix_rate_tflops()
        log(f"  {tflops} TFLOP/s" if tflops is not None else "  not measured (see above): no ceiling")

    with tempfile.TemporaryDirectory() as tmp:
        names = list(dict.fromkeys(nets + args.parity_nets.split(",")))
        paths = gpu_check.net_paths(pathlib.Path(tmp), [n for n in names if n], args.net_dir)
        if "parity" not in skip:
            boards = bench_positions(1024, seed=7)
            pbatches = [int(b) for b in args.parity_batches.split(",")]
            for v in variants:
                log(f"== parity, variant {v} (t={time.perf_counter() - t_start:.0f}s)")
                start = len(checks)
                try:
                    gpu_check.parity(checks, {n: paths[n] for n in args.parity_nets.split(",") if n in paths},
                                     args.vendor, pbatches, boards, options=VARIANTS[v])
                except Exception:  # noqa: BLE001
                    checks.append(dict(step="parity", status="ERROR", error=traceback.format_exc()))
                for c in checks[start:]:
                    c["variant"] = v
        if "bench" not in skip:
            for net in nets:
                if net not in paths:
                    continue
                weights = load_weights(paths[net])
                for prec in args.precisions.split(","):
                    bname = args.vendor + ("-fp16" if prec == "fp16" else "")
                    for v in (variants if net in args.bench_variants_nets.split(",") else variants[:1]):
                        for mode in args.modes.split(","):
                            try:
                                got = bench_ours(weights, bname, batches, args.seconds, mode, VARIANTS[v])
                            except Exception as e:  # noqa: BLE001
                                log(f"  {net} {bname} {v} {mode}: {type(e).__name__}: {e}")
                                continue
                            rows += [dict(engine=OURS, net=net, precision=prec, variant=v, mode=mode,
                                          batch=b, nps=n, source="measured") for b, n in got.items()]
                            log(f"  {net:10s} {bname:10s} {v:9s} {mode:8s} "
                                + " ".join(f"{b}:{n:.0f}" for b, n in got.items()))
        if args.lc0 and "lc0" not in skip:
            log("== lc0")
            for net in nets:
                for prec in args.precisions.split(","):
                    backend = args.lc0_backend if prec == "fp16" else args.lc0_backend.replace("-fp16", "")
                    try:
                        got = bench_lc0(args.lc0, backend, paths[net], batches, args.lc0_runs)
                    except Exception as e:  # noqa: BLE001
                        log(f"  lc0 {net} {backend}: {e}")
                        continue
                    rows += [dict(engine="lc0", net=net, precision=prec, variant=backend, mode="lc0-way",
                                  batch=b, nps=n, source="measured") for b, n in got.items()]
                    log(f"  lc0 {net:10s} {backend:10s} " + " ".join(f"{b}:{n:.0f}" for b, n in got.items()))

    found_ceilings = ceilings(rows, tflops) if tflops is not None else []
    for c in found_ceilings:
        log(f"  ceiling {c['net']}: {tflops:.1f} TFLOP/s / {c['gflop_per_position']:.2f} GFLOP = "
            f"{c['ceiling_nps']:,.0f} positions/s; b{CEILING_BATCH} {fractions_text(c)}")
    (out / "gpu_bench_ceiling.json").write_text(json.dumps(found_ceilings, indent=1))

    if not any(r["engine"] == "lc0" for r in rows):
        measured = {(r["net"], r["precision"]) for r in rows}
        rows += [r for r in reference_rows() if (r["net"], r["precision"]) in measured]
    write_csv(out / "gpu_bench.csv", rows)
    table = markdown(rows, batches) + ceiling_markdown(found_ceilings)
    header = [f"# gpu_bench: {device.get('name', '?')} ({device.get('arch', '?')})", "",
              "lc0-rocm: measured by this script; `lc0 master (reference)`: issue 9's figures "
              "(lent H100, `lc0 backendbench --batches=60`), not measured here.", ""]
    (out / "gpu_bench.md").write_text("\n".join(header) + table)
    plot(out / "gpu_bench.png", rows)
    (out / "gpu_bench_parity.json").write_text(json.dumps(checks, indent=1, default=str))

    bad = [c for c in checks if c.get("status") != "OK"]
    log(f"== summary (total {time.perf_counter() - t_start:.0f}s)")
    log(f"  parity: {len(checks) - len(bad)} ok, {len(bad)} not ok")
    for c in bad[:20]:
        log(f"  NOT OK: {json.dumps(c, default=str)[:300]}")
    log(table)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
