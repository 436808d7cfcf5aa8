#!/usr/bin/env python3
"""A fresh `lc0-rocm` command with the steps of its start timed: chosen
functions are wrapped as their modules are imported (an import hook), so the
command imports what it always does, in its own order, on its own threads.
Prints, after the command, each timed call and each watched module's import:
start and end in seconds from this script's start, the thread, the name.

    python3 scripts/fresh_timeline.py analyse games.fen -w t82.pb.gz -b cuda-fp16 --nodes 100 -o out.jsonl
    python3 scripts/fresh_timeline.py --watch lc0_rocm.engine:Engine.search bench -b random

Run it from the tree to time (`cd tree && python3 .../fresh_timeline.py`):
the tree's lc0_rocm is the one imported. What happened in the process
before this script began (Python's start) is printed as its own figure.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time

T0 = time.perf_counter()

# The steps between a command's start and its first search: finding and
# loading the GPU library, starting the GPU, reading the weights, creating
# the backend, planning the inputs, writing the outputs.
WATCH = {
    "lc0_rocm.backends.native_build": ["detect_arch", "_toolchain_for", "_target", "cached_library", "build",
                                       "source_hash"],
    "lc0_rocm.buildcache": ["verify"],
    "lc0_rocm.backends.native": ["load_library", "_runtime", "prepare", "create", "device_info"],
    "lc0_rocm.backends": ["create", "resolve"],
    "lc0_rocm.analysis.runner": ["gpu_count", "build_plan", "_prepare_workers", "auto_workers"],
    "lc0_rocm.network": ["load_weights", "load_network"],
    "lc0_rocm.analysis.writers": ["write_outputs"],
}
EVENTS: list[tuple[float, float, str, str]] = []
LOCK = threading.Lock()


def record(started: float, label: str) -> None:
    with LOCK:
        EVENTS.append((started - T0, time.perf_counter() - T0, threading.current_thread().name, label))


def wrap(module, dotted: str) -> None:
    """Time module.<dotted> (a function, or Class.method)."""
    owner, _, name = dotted.rpartition(".")
    target = getattr(module, owner) if owner else module
    original = getattr(target, name, None)
    if original is None or getattr(original, "_timed", False):
        return
    label = f"{module.__name__.rsplit('.', 1)[-1]}.{dotted}"

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            record(started, label)
    timed._timed = True
    setattr(target, name, timed)


class TimingHook(importlib.abc.MetaPathFinder):
    """Finds watched modules as the path finder does, and wraps their
    functions right after each one runs (before anything imports names from
    it)."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in WATCH:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            started = time.perf_counter()
            execute(module)
            record(started, f"import {fullname}")
            for name in WATCH[fullname]:
                wrap(module, name)
        spec.loader.exec_module = exec_module
        return spec


def process_age() -> float:
    """Seconds since this process started (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def main(argv: list[str]) -> int:
    age = process_age()
    while argv[:1] == ["--watch"]:
        if len(argv) < 2 or ":" not in argv[1]:
            print("fresh_timeline: --watch wants MODULE:FUNCTION", file=sys.stderr)
            return 2
        module, _, function = argv[1].partition(":")
        WATCH.setdefault(module, []).append(function)
        argv = argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    sys.meta_path.insert(0, TimingHook())
    sys.path.insert(0, os.getcwd())
    from lc0_rocm import cli
    code = 1
    try:
        code = cli.main(argv)
    finally:
        print(f"fresh_timeline: the process was {age:.3f} s old at this script's start; "
              f"the command ended at {time.perf_counter() - T0:.3f} s", file=sys.stderr)
        for started, ended, thread, label in sorted(EVENTS):
            print(f"  {started:7.3f} {ended:7.3f} ({ended - started:6.3f})  {thread[:24]:24s} {label}",
                  file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
