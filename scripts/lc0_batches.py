#!/usr/bin/env python3
"""The batch sizes lc0 master's CUDA backend runs its forward passes at,
beside ours (issue 70: "batches at least as large as lc0 forms"). lc0 prints
no batch sizes, so scripts/lc0_batches.cpp, preloaded into the lc0 process,
counts each pass by its input upload (lc0_batches.cpp says how).

    python3 scripts/lc0_batches.py -- .anchors/lc0-master/run-lc0.sh benchmark \\
        --backend=cuda-fp16 --weights=t82.pb.gz --num-positions=4 --movetime=4000

Builds the probe with the system C++ compiler and the CUDA runtime's headers
(CUDA_HOME, /usr/local/cuda, nvcc's folder or a pip nvidia-cuda-runtime
package), runs the command with it, and prints the passes, their mean
batch and the histogram in the pass log's buckets. For a program linked to
the shared CUDA runtime only (lc0 master's anchor is).
"""
from __future__ import annotations

import argparse
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lc0_rocm.backends.passes import batch_histogram  # noqa: E402

SOURCE = pathlib.Path(__file__).resolve().with_suffix(".cpp")
HEADER = "cuda_runtime_api.h"


class ProbeError(RuntimeError):
    """The probe cannot be built or read here."""


def cuda_include() -> pathlib.Path | None:
    """A folder holding the CUDA runtime's headers, or None."""
    places = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        places.append(str(pathlib.Path(nvcc).resolve().parent.parent))
    places = [str(pathlib.Path(p) / "include") for p in places if p]
    for site in sys.path:     # pip's nvidia-cuda-runtime-cu12 / nvidia/cu13
        places += glob.glob(os.path.join(site, "nvidia", "*", "include"))
        places += glob.glob(os.path.join(site, "nvidia", "cuda_runtime", "include"))
    return next((pathlib.Path(p) for p in places if (pathlib.Path(p) / HEADER).is_file()), None)


def build(folder: str | os.PathLike, include: pathlib.Path | None = None) -> pathlib.Path:
    """Compile the probe into `folder`; ProbeError with the reason if it cannot."""
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    include = include or cuda_include()
    if not compiler:
        raise ProbeError("no C++ compiler (c++, g++ or $CXX)")
    if include is None:
        raise ProbeError(f"no {HEADER} (CUDA_HOME, /usr/local/cuda, nvcc's folder or a pip nvidia package)")
    out = pathlib.Path(folder) / "liblc0_batches.so"
    cmd = [compiler, "-std=c++17", "-shared", "-fPIC", "-O2", "-Wall", f"-I{include}", "-o", str(out), str(SOURCE),
           "-ldl", "-lpthread"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ProbeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return out


def probe_env(library: pathlib.Path, counts: pathlib.Path, env: dict | None = None) -> dict:
    """The environment that preloads the probe and names its output."""
    env = dict(os.environ if env is None else env)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    env["LC0_BATCHES_OUT"] = str(counts)
    return env


def read_counts(path: pathlib.Path) -> dict[int, int]:
    """{rows: passes} from the probe's output (rows 0: graph launches with no
    upload of their own or before them, such as a second graph launched
    beside a pass's); {} where no process made a CUDA call the probe watches
    (a CPU backend, a program linked to the CUDA runtime statically)."""
    if not path.is_file():
        return {}
    counts = {}
    for line in path.read_text().split("\n"):
        if line.strip():
            rows, passes = line.split()
            counts[int(rows)] = int(passes)
    return counts


def summary(counts: dict[int, int]) -> dict:
    """Passes, their mean batch and histogram (the pass log's buckets), and
    the graph launches without an upload apart."""
    known = {rows: n for rows, n in counts.items() if rows > 0}
    passes = sum(known.values())
    return {"passes": passes, "launches_without_upload": counts.get(0, 0),
            "mean_batch": sum(r * n for r, n in known.items()) / passes if passes else 0.0,
            "histogram": batch_histogram(known)}


def run(cmd: list[str], folder: str | os.PathLike, timeout: float = 3600, **kwargs) -> tuple:
    """Run `cmd` with the probe: (its CompletedProcess, summary dict)."""
    library = build(folder)
    counts = pathlib.Path(folder) / "lc0_batches.txt"
    done = subprocess.run(cmd, env=probe_env(library, counts), timeout=timeout, **kwargs)
    return done, summary(read_counts(counts))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments, after --")
    args = p.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        p.error("give the command to run after --")
    with tempfile.TemporaryDirectory(prefix="lc0-batches-") as folder:
        try:
            done, result = run(cmd, folder)
        except (ProbeError, OSError) as e:
            print(f"lc0_batches: {e}", file=sys.stderr)
            return 2
    if not result["passes"] and not result["launches_without_upload"]:
        print(f"exit status {done.returncode}; no pass seen (no CUDA call the probe watches: a CPU backend, "
              "or the CUDA runtime linked statically)")
        return 0 if done.returncode == 0 else 1
    apart = result["launches_without_upload"]
    print(f"exit status {done.returncode}; {result['passes']} passes, mean batch {result['mean_batch']:.1f}"
          f"{f'; {apart} graph launches without an upload apart' if apart else ''}")
    print("histogram: " + ", ".join(f"{k}: {v}" for k, v in result["histogram"].items()))
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
