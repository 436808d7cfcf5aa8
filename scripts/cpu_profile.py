#!/usr/bin/env python3
"""Where the search's host time goes, by function: gperftools' CPU profiler
(SIGPROF sampling of every thread of the process) around searches of
benchmark positions, then `pprof --text` of the result.

    python3 scripts/cpu_profile.py -w maia-1900.pb.gz -b cuda-fp16 --threads 5 \\
        --positions 1,3 --movetime 2 --out DIR

The profiler is started after the net is loaded and the engine warmed, and
stopped while the native core is still loaded, so the core's functions are
named (a profile written at exit misses them: the library is gone by then).
One profile per position: DIR/cpu_pos<N>.prof and DIR/cpu_pos<N>.txt.

Needs gperftools' libprofiler and its pprof script, e.g. Debian's
libgoogle-perftools4 and google-perftools (`apt-get download` them where
nothing can be installed, unpack with `dpkg -x`, and pass --profiler and
--pprof; libraries beside --profiler, such as libunwind, are loaded with
it).
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def load_profiler(path: str | None):
    """libprofiler (ProfilerStart / ProfilerStop), or exit with why not."""
    name = path or ctypes.util.find_library("profiler")
    if not name:
        sys.exit("cpu_profile: libprofiler not found (gperftools); pass --profiler PATH")
    try:
        lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        # An unpacked copy's dependencies (libunwind) lie beside it, where
        # the dynamic linker does not look: load those first and retry.
        beside = [p for p in pathlib.Path(path).parent.glob("lib*.so*") if p.name != pathlib.Path(path).name] if path else []
        for dependency in beside:
            try:
                ctypes.CDLL(str(dependency), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                pass
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            sys.exit(f"cpu_profile: cannot load {name}: {e}")
    lib.ProfilerStart.argtypes = [ctypes.c_char_p]
    lib.ProfilerStart.restype = ctypes.c_int
    return lib


WAITING = "pthread_mutex|lll_|futex|sched_yield"


def run_pprof(pprof: str, prof: pathlib.Path, extra: list[str]) -> str:
    return subprocess.run(["perl", pprof, "--text", *extra, sys.executable, str(prof)], capture_output=True,
                          text=True).stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-w", "--weights", default=None)
    parser.add_argument("-b", "--backend", default="random")
    parser.add_argument("-o", "--backend-opts", default="")
    parser.add_argument("--threads", type=int, default=0, help="Threads (0: the engine's default)")
    parser.add_argument("--positions", default="1", help="comma list of bench position numbers (1-based)")
    parser.add_argument("--movetime", type=float, default=2.0, help="seconds per search")
    parser.add_argument("--searches", type=int, default=2, help="searches per position, each from a new game")
    parser.add_argument("--frequency", type=int, default=1000, help="samples per second of CPU time")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a search option")
    parser.add_argument("--profiler", default=None, help="libprofiler.so (default: found on the library path)")
    parser.add_argument("--pprof", default=None, help="gperftools' pprof script (default: google-pprof or pprof)")
    parser.add_argument("--top", type=int, default=40, help="lines of pprof --text to print")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)

    os.environ["CPUPROFILE_FREQUENCY"] = str(args.frequency)   # read when the profiler starts
    profiler = load_profiler(args.profiler)
    pprof = args.pprof or shutil.which("google-pprof") or shutil.which("pprof")

    from lc0_rocm.bench import POSITIONS, board_for
    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    options = {name: value for name, _, value in (item.partition("=") for item in args.set)}
    net = load_network(args.weights, backend=args.backend, backend_opts=args.backend_opts or None)
    try:
        engine = Engine(net, implementation="native", Threads=args.threads, **options)
        for number in (int(p) for p in args.positions.split(",")):
            board = board_for(POSITIONS[number - 1])
            engine.new_game()
            engine.search(board, movetime=min(0.3, args.movetime))     # caches and graphs warm
            prof = out / f"cpu_pos{number}.prof"
            nodes, started = 0, time.perf_counter()
            if not profiler.ProfilerStart(str(prof).encode()):
                sys.exit("cpu_profile: ProfilerStart failed")
            try:
                for _ in range(args.searches):
                    engine.new_game()
                    nodes += engine.search(board, movetime=args.movetime).nodes
            finally:
                profiler.ProfilerStop()
            wall = time.perf_counter() - started
            print(f"position {number}: {nodes / wall:,.0f} nodes/s over {wall:.1f} s "
                  f"({engine.search_threads()} search threads); profile {prof}", flush=True)
            if pprof:
                text = run_pprof(pprof, prof, [])
                # Who waits: the functions on the stacks of samples taken in
                # locks, futexes and yields, by their share of those stacks.
                waits = run_pprof(pprof, prof, ["--cum", f"--focus={WAITING}"])
                (out / f"cpu_pos{number}.txt").write_text(text + "\n== waiting (--cum --focus)\n" + waits)
                print("\n".join(text.splitlines()[:args.top + 1]), flush=True)
                print("-- in locks, futexes and yields, by caller (cumulative):")
                print("\n".join(waits.splitlines()[:args.top + 1]), flush=True)
            else:
                print("cpu_profile: no pprof script found (--pprof): the raw profile is kept", flush=True)
    finally:
        net.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
