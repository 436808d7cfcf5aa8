#!/usr/bin/env python3
"""Two GPUs in one host: parity and scaling of roundrobin, multiplexing and demux.

Run once on a machine with 2 GPUs, from the checkout root:
    python3 scripts/multigpu_bench.py --out DIR [--vendor cuda|rocm] (default: the toolchain found)
Steps, each reported even when an earlier one failed:
  0. dependencies: when chess/cffi/protobuf are missing, unpack the wheels
     of .whl/ into .whl/site (no index, no pip needed) and use them;
  1. build the native library; count the GPUs (stops when fewer than 2);
  2. make a T82 net (make-net preset t82, random weights, seed 1);
  3. parity, fp16: gpu=1 alone against gpu=0 alone, then each wrapper over
     (gpu=0),(gpu=1) against gpu=0 alone, batches 1, 7, 64, 256, 257: bit
     for bit where the same kernels run (roundrobin and multiplexing run the
     whole batch on one GPU; demux's parts are compared with gpu=0 running
     the same parts), with the largest difference against the unsplit batch;
  4. backendbench, packed input: one GPU against demux over two at
     --batches (the acceptance figure is batch 256: >= 1.8x);
  5. concurrent callers: 2 and 4 threads calling forward_packed at batch
     --concurrent-batch on one GPU, and on roundrobin, multiplexing and demux
     over two;
  6. search: `lc0-rocm bench` nps with one GPU and with demux over two (the
     acceptance figure: >= 1.6x), a subprocess each, with its own time limit.
The summary is printed last; everything also goes to DIR/multigpu_bench.json.
Exit status 0 when every parity check passed and both ratios met their bar.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
WHEELS = ROOT / ".whl"
SITE = WHEELS / "site"
WRAPPERS = ("roundrobin", "multiplexing", "demux")
PARITY_BATCHES = (1, 7, 64, 256, 257)
BACKENDBENCH_BAR = 1.8
SEARCH_BAR = 1.6


def log(msg: str) -> None:
    print(msg, flush=True)


def ensure_dependencies() -> str:
    """Import the runtime dependencies, installing .whl/*.whl into .whl/site first
    when one is missing. Returns what was done."""
    for path in (str(SITE), str(ROOT)):
        if pathlib.Path(path).is_dir() and path not in sys.path:
            sys.path.insert(0, path)
    try:
        import cffi, chess, google.protobuf, numpy  # noqa: E401, F401
        return "dependencies present"
    except ImportError as e:
        missing = str(e)
    wheels = sorted(glob.glob(str(WHEELS / "*.whl")))
    if not wheels:
        raise SystemExit(f"missing dependency ({missing}) and no wheels in {WHEELS}")
    import zipfile
    for wheel in wheels:   # a wheel is a zip of the package's files: unpacking installs it (no pip needed)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(SITE)
    if str(SITE) not in sys.path:
        sys.path.insert(0, str(SITE))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), str(ROOT),
                                                             os.environ.get("PYTHONPATH", "")]))
    import importlib
    importlib.invalidate_caches()
    import cffi, chess, google.protobuf  # noqa: E401, F401
    return f"installed {len(wheels)} wheels into {SITE} ({missing})"


def max_abs(got, want) -> float:
    import numpy as np
    return max(float(np.max(np.abs(g.astype(np.float64) - w))) if g.size else 0.0
               for g, w in zip(got, want))


def bitwise(got, want) -> bool:
    import numpy as np
    return all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want))


SETTLE_CALLS = 3   # a GPU stream runs a batch size plainly, then captures a graph, then replays it


def settled(backend, masks, values, calls=SETTLE_CALLS):
    """The last of `calls` identical forward passes: every stream involved
    has reached graph replay, so compared runs use the same path."""
    for _ in range(calls):
        out = backend.forward_packed(masks, values)
    return out


def demux_reference(one, masks, values, n):
    """gpu=0 alone on the parts demux cuts n positions into (two children)."""
    from lc0_rocm.backends.children import concat_outputs
    from lc0_rocm.backends.demux import split_sizes
    parts, start = [], 0
    for size in split_sizes(n, 2):
        parts.append(settled(one, masks[start:start + size], values[start:start + size]))
        start += size
    return concat_outputs(parts)


def two_gpu_options(gpu_backend: str) -> dict:
    from lc0_rocm.backends.options import parse
    return parse(f"backend={gpu_backend},(gpu=0),(gpu=1)")


# ---------------------------------------------------------------- steps
def parity(results, weights, gpu_backend, masks, values):
    from lc0_rocm import backends
    one = backends.create(gpu_backend, weights, gpu="0")
    try:
        other = backends.create(gpu_backend, weights, gpu="1")
        try:
            for n in PARITY_BATCHES:
                got, want = settled(other, masks[:n], values[:n]), settled(one, masks[:n], values[:n])
                ok = bitwise(got, want)
                results.append(dict(step="parity", backend=f"{gpu_backend} gpu=1", batch=n, bitwise=ok,
                                    max_abs=max_abs(got, want), status="OK" if ok else "FAIL"))
                log(f"  gpu=1 vs gpu=0           n={n:4d} bitwise {ok} max|diff| {max_abs(got, want):.2e}")
        finally:
            other.close()
        for name in WRAPPERS:
            wrapper = backends.create(name, weights, **two_gpu_options(gpu_backend))
            try:
                for n in PARITY_BATCHES:
                    whole = settled(one, masks[:n], values[:n])
                    want = demux_reference(one, masks, values, n) if name == "demux" else whole
                    settled(wrapper, masks[:n], values[:n], 2 * SETTLE_CALLS)   # both GPUs' streams
                    ok = True
                    for _ in range(2):  # twice: roundrobin runs it on each GPU
                        got = wrapper.forward_packed(masks[:n], values[:n])
                        ok = ok and bitwise(got, want)
                    results.append(dict(step="parity", backend=wrapper.name, batch=n, bitwise=ok,
                                        max_abs_vs_unsplit=max_abs(got, whole), status="OK" if ok else "FAIL"))
                    log(f"  {name:24s} n={n:4d} bitwise {ok} max|diff| vs unsplit {max_abs(got, whole):.2e}")
            finally:
                wrapper.close()
    finally:
        one.close()


def backendbench(results, weights, gpu_backend, pool, batches, seconds):
    """One GPU against demux over two (one worker per GPU, and two). The one
    GPU also runs half of each batch: 2 x nps(half) / nps(whole) bounds what
    any split of that batch over two such GPUs can reach."""
    from lc0_rocm import backends
    from lc0_rocm.backendbench import summarize, time_batch_size
    from lc0_rocm.backends.options import parse
    configs = [("one GPU", gpu_backend, {"gpu": "0"}, sorted(set(batches) | {max(1, b // 2) for b in batches})),
               ("demux", "demux", two_gpu_options(gpu_backend), batches),
               ("demux threads=2", "demux", parse(f"backend={gpu_backend},threads=2,(gpu=0),(gpu=1)"), batches)]
    nps = {}
    for label, name, options, sizes in configs:
        backend = backends.create(name, weights, **options)
        try:
            for batch in sizes:
                row = summarize(batch, time_batch_size(backend.forward_packed_into, pool, batch, seconds,
                                                       host_empty=backend.host_empty))
                nps[(label, batch)] = row["mean_nps"]
                log(f"  {label:16s} batch {batch:5d}: {row['mean_nps']:10.0f} pos/s ({row['mean_ms']:.3f} ms)")
        finally:
            backend.close()
    for batch in batches:
        one = nps[("one GPU", batch)]
        bound = 2 * nps[("one GPU", max(1, batch // 2))] / one
        best = max(("demux", "demux threads=2"), key=lambda k: nps[(k, batch)])
        ratio = nps[(best, batch)] / one
        bar = BACKENDBENCH_BAR if batch == 256 else None
        results.append(dict(step="backendbench", batch=batch, one_gpu_nps=one,
                            demux_nps=nps[("demux", batch)], demux_threads2_nps=nps[("demux threads=2", batch)],
                            best=best, ratio=ratio, split_bound=bound, bar=bar,
                            status="OK" if bar is None or ratio >= bar else "FAIL"))
        log(f"  batch {batch:5d}: {best} / one GPU = {ratio:.2f}x; a split's bound 2 x nps({max(1, batch // 2)})"
            f" / nps({batch}) = {bound:.2f}x" + (f" (bar {bar}x)" if bar else ""))


def concurrent(results, weights, gpu_backend, pool, batch, seconds):
    from lc0_rocm import backends
    masks, values = pool
    makers = [("one GPU", lambda: backends.create(gpu_backend, weights, gpu="0"))]
    makers += [(f"{w} 2 GPUs", lambda w=w: backends.create(w, weights, **two_gpu_options(gpu_backend)))
               for w in WRAPPERS]
    base = {}
    for label, make in makers:
        backend = make()
        try:
            for threads in (2, 4):
                count = [0] * threads
                stop = time.perf_counter() + seconds

                def run(i):
                    j = i
                    while True:   # at least one call per thread
                        s = (j * batch) % (len(masks) - batch)
                        backend.forward_packed(masks[s:s + batch], values[s:s + batch])
                        count[i] += batch
                        j += threads
                        if time.perf_counter() >= stop:
                            return

                for i in range(threads):   # warm-up: every thread's stream and graph
                    s = (i * batch) % (len(masks) - batch)
                    backend.forward_packed(masks[s:s + batch], values[s:s + batch])
                t0 = time.perf_counter()
                workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
                for w in workers:
                    w.start()
                for w in workers:
                    w.join()
                nps = sum(count) / (time.perf_counter() - t0)
                base.setdefault(threads, nps)
                ratio = nps / base[threads]
                results.append(dict(step="concurrent", backend=backend.name, threads=threads, batch=batch,
                                    nps=nps, ratio_vs_one_gpu=ratio, status="OK"))
                log(f"  {label:24s} {threads} threads x batch {batch}: {nps:10.0f} pos/s ({ratio:.2f}x one GPU)")
        finally:
            backend.close()


def search_nps(results, net_path, gpu_backend, movetime, positions, timeout):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(SITE) if SITE.is_dir() else "",
                                                      env.get("PYTHONPATH", "")]))
    figures = {}
    runs = [("one GPU", ["-b", gpu_backend, "-o", "gpu=0"]),
            ("demux 2 GPUs", ["-b", "demux", "-o", f"backend={gpu_backend},(gpu=0),(gpu=1)"]),
            ("roundrobin 2 GPUs", ["-b", "roundrobin", "-o", f"backend={gpu_backend},(gpu=0),(gpu=1)"])]
    for label, flags in runs:
        cmd = [sys.executable, "-m", "lc0_rocm", "bench", "-w", str(net_path), *flags,
               "--movetime", str(movetime), "--num-positions", str(positions)]
        log(f"  {' '.join(cmd)}")
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        except subprocess.TimeoutExpired:
            results.append(dict(step="search", backend=label, status="ERROR", error=f"timeout {timeout}s"))
            log(f"  {label}: timed out after {timeout}s")
            continue
        found = re.search(r"Nodes/second\s*:\s*(\d+)", out.stdout)
        if out.returncode != 0 or not found:
            results.append(dict(step="search", backend=label, status="ERROR",
                                error=(out.stderr or out.stdout)[-2000:]))
            log(f"  {label}: failed (rc {out.returncode}): {(out.stderr or out.stdout)[-500:]}")
            continue
        figures[label] = int(found.group(1))
        log(f"  {label}: {figures[label]} nps")
    two = [k for k in figures if k != "one GPU"]
    if "one GPU" in figures and two:
        best = max(two, key=figures.get)
        ratio = figures[best] / max(figures["one GPU"], 1)
        results.append(dict(step="search", one_gpu_nps=figures["one GPU"],
                            demux_nps=figures.get("demux 2 GPUs"), roundrobin_nps=figures.get("roundrobin 2 GPUs"),
                            best=best, ratio=ratio, bar=SEARCH_BAR, status="OK" if ratio >= SEARCH_BAR else "FAIL"))
        for label in two:
            log(f"  search nps {label} / one GPU = {figures[label] / max(figures['one GPU'], 1):.2f}x")
        log(f"  best: {best} {ratio:.2f}x (bar {SEARCH_BAR}x)")


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for multigpu_bench.json")
    p.add_argument("--vendor", choices=["cuda", "rocm"], help="default: the toolchain found")
    p.add_argument("--net", default="t82", help="make-net preset or a .pb.gz path (default t82)")
    p.add_argument("--batches", default="64,128,256,512,1024", help="backendbench batch sizes")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per backendbench batch size")
    p.add_argument("--concurrent-batch", type=int, default=128)
    p.add_argument("--movetime", type=int, default=5000, help="search bench: ms per position")
    p.add_argument("--positions", type=int, default=4, help="search bench: positions")
    p.add_argument("--search-timeout", type=int, default=150, help="search bench: seconds per run")
    p.add_argument("--skip", default="", help="comma list of steps: parity,backendbench,concurrent,search")
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    results: list[dict] = []
    t_start = time.perf_counter()

    def save():
        (out / "multigpu_bench.json").write_text(json.dumps(results, indent=1, default=str))

    log("== dependencies")
    log("  " + ensure_dependencies())
    from lc0_rocm.backendbench import bench_positions, encode_pool
    from lc0_rocm.backends import native
    from lc0_rocm.makenet import make_net
    from lc0_rocm.weights import load_weights

    log("== build")
    try:
        t0 = time.perf_counter()
        prefixes = [args.vendor] if args.vendor else ["cuda", "rocm"]
        usable = [p for p in prefixes if native.is_available(f"{p}-fp16")[0]]
        if not usable:
            raise native.NativeError("; ".join(native.is_available(f"{p}-fp16")[1] for p in prefixes))
        gpu_backend = f"{usable[0]}-fp16"
        ffi, lib = native.load_library(native.build(native.split_name(gpu_backend)[0]))
        count = ffi.new("int*")
        native.check(ffi, lib, lib.lc0rocm_get_device_count(count), "device count")
        devices = [native.device_info(ffi, lib, i) for i in range(count[0])]
        results.append(dict(step="build", seconds=time.perf_counter() - t0, devices=devices,
                            status="OK" if count[0] >= 2 else "FAIL"))
        for i, d in enumerate(devices):
            log(f"  gpu {i}: {d['name']} ({d['arch']}, {d['multiprocessors']} multiprocessors)")
        if count[0] < 2:
            log(f"  {count[0]} GPU(s): this script needs 2")
            save()
            return 1
    except Exception as e:  # noqa: BLE001
        results.append(dict(step="build", status="ERROR", error=str(e)))
        log(f"  build failed: {e}")
        save()
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        log(f"== net {args.net}")
        t0 = time.perf_counter()
        net_path = pathlib.Path(args.net) if args.net.endswith((".pb.gz", ".pb")) else \
            make_net(args.net, pathlib.Path(tmp) / f"{args.net}.pb.gz", seed=1)
        weights = load_weights(str(net_path))
        pool = encode_pool(bench_positions(1024, seed=7), weights.format.input, packed=True)
        log(f"  {net_path} in {time.perf_counter() - t0:.1f}s")
        batches = [int(b) for b in args.batches.split(",")]
        steps = [
            ("parity", lambda: parity(results, weights, gpu_backend, *pool)),
            ("backendbench", lambda: backendbench(results, weights, gpu_backend, pool, batches, args.seconds)),
            ("concurrent", lambda: concurrent(results, weights, gpu_backend, pool, args.concurrent_batch,
                                              args.seconds)),
            ("search", lambda: search_nps(results, net_path, gpu_backend, args.movetime, args.positions,
                                          args.search_timeout)),
        ]
        for step, fn in steps:
            if step in skip:
                continue
            log(f"== {step} (t={time.perf_counter() - t_start:.0f}s)")
            try:
                fn()
            except Exception:  # noqa: BLE001 - report and go on
                results.append(dict(step=step, status="ERROR", error=traceback.format_exc()))
                log(traceback.format_exc())
            save()

    log(f"== summary (total {time.perf_counter() - t_start:.0f}s)")
    for r in results:
        if r["step"] in ("backendbench", "search") and "ratio" in r:
            log(f"  {r['step']:12s} batch {r.get('batch', '-')}: {r['ratio']:.2f}x"
                + (f" (bar {r['bar']}x) {r['status']}" if r.get("bar") else ""))
    bad = [r for r in results if r.get("status") != "OK"]
    for r in bad[:20]:
        log(f"  NOT OK: {json.dumps(r, default=str)[:300]}")
    save()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
