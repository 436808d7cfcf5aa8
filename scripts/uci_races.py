"""A GUI's races through the real engine process, each followed by silence
on an open stdin (issue 69's acceptance: 20 tries each, on a loaded
2-core machine):

    python3 scripts/uci_races.py --tries 20 [--weights PATH] [--load 2]

Races (tests/uci_races.py): go + stop / ucinewgame / position / go during a
search, ponder + ponderhit / stop, go infinite + stop, a stop storm, each
followed by a new position and `go`, written line by line and in one write;
and new processes given `uci` + `isready`, `uci` + `setoption` + `isready` +
`go`, `position` + `go` in one write. --load N runs N busy processes beside
it. Exit status 0 when every `go` was answered with nothing more sent.

    python3 scripts/uci_races.py --select-reader [--engine lc0 --weights W]

reads instead as some GUIs do (issue 69's probe): select() on the pipe,
then a buffered readline, which keeps a second line that arrived in the
same read where select() no longer sees it. It counts the tries whose
bestmove did not come within 5 s of silence (ours, or with --engine any UCI
command line, e.g. lc0 v0.32.1's `lc0 --backend=eigen`)."""
from __future__ import annotations

import argparse
import multiprocessing
import os
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lc0_rocm.buildcache import cache_root  # noqa: E402
from tests import uci_races  # noqa: E402
from tests.conftest import find_maia  # noqa: E402


def _spin(stop) -> None:
    while not stop.is_set():
        sum(range(10000))


SELECT_SEQUENCE = ("uci\nisready\nposition startpos\ngo infinite\nstop\n"
                   "position fen 4k3/8/8/8/8/8/8/4K2R w K - 0 1\ngo nodes 40\n")


def select_reader_tries(command: list[str], tries: int, wait_s: float = 5.0) -> int:
    """Tries (of `tries`) whose two bestmoves a select-then-buffered-readline
    reader did not see within `wait_s` of silence after the sequence."""
    import select
    import subprocess
    held = 0
    for _ in range(tries):
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        try:
            proc.stdin.write(SELECT_SEQUENCE)
            proc.stdin.flush()
            seen, deadline = 0, time.monotonic() + 60.0
            while seen < 2:
                ready, _, _ = select.select([proc.stdout], [], [], wait_s if seen or time.monotonic() > deadline
                                            else max(0.1, deadline - time.monotonic()))
                if not ready:
                    held += 1
                    break
                line = proc.stdout.readline()
                if not line:
                    held += 1
                    break
                seen += line.startswith("bestmove")
        finally:
            proc.kill()
            proc.wait()
    return held


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--weights", help="net file (default: maia-1900 where the tests find it)")
    parser.add_argument("--load", type=int, default=0, help="busy processes to run beside it")
    parser.add_argument("--select-reader", action="store_true", help="read as a select()-then-buffer GUI")
    parser.add_argument("--backend", default="cpu",
                        help="the engine's backend for the races (sim: search threads picking at once)")
    parser.add_argument("--engine", default="", help="with --select-reader: another engine's command line")
    args = parser.parse_args(argv)
    weights = args.weights or find_maia()
    if weights is None:
        parser.error("maia-1900 not found: pass --weights or `lc0-rocm fetch-net maia-1900`")
    # the engines share the user's native builds (each test process would
    # otherwise build the chess core in its own temporary cache)
    os.environ.setdefault("LC0ROCM_BUILD_CACHE", str(cache_root()))
    if args.select_reader:
        command = args.engine.split() if args.engine else [sys.executable, "-m", "lc0_rocm",
                                                              f"--weights={weights}", "--backend=cpu"]
        held = select_reader_tries(command, args.tries)
        print(f"select reader, {' '.join(command[:3])}: {held} of {args.tries} tries held a bestmove")
        return 1 if held else 0
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    failures = 0
    try:
        with tempfile.TemporaryDirectory() as cwd:
            for race in uci_races.RACES:
                start = time.monotonic()
                try:
                    uci_races.run_races(cwd, weights, args.tries, races=[race], backend=args.backend)
                    status = "ok"
                except AssertionError as e:
                    failures += 1
                    status = f"FAILED: {e}"
                print(f"{race.name:<24} {2 * args.tries} tries  {time.monotonic() - start:6.1f} s  {status}",
                      flush=True)
            start = time.monotonic()
            try:
                uci_races.run_fresh_process_races(cwd, weights, args.tries)
                status = "ok"
            except AssertionError as e:
                failures += 1
                status = f"FAILED: {e}"
            print(f"{'one write to a new process':<24} {3 * args.tries} tries  "
                  f"{time.monotonic() - start:6.1f} s  {status}", flush=True)
    finally:
        stop.set()
        for p in spinners:
            p.join()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
