"""Search nps with a GPU stream per search thread (ours) against one network
call at a time (lc0 cuda's default without multi_stream): the same native
slots, wrapped in one lock for the serial runs. Two rounds in turns over
lc0's benchmark positions 1-4, cuda-fp16.

    python3 scripts/search_streams_vs_serial.py NET.pb.gz --threads 2,3 --movetime 3
"""
from __future__ import annotations

import argparse
import sys
import threading
import time


from lc0_rocm import native_core
from lc0_rocm.backends.base import NativeSlot
from lc0_rocm.bench import POSITIONS, board_for
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network


def serial_slots(original, ffi, gate, keep):
    """native_slots() whose calls run one at a time: each slot becomes a
    callback that takes `gate` and calls the real slot."""
    def slots(count):
        wrapped = []
        for slot in original(count):
            fn = ffi.cast("lc0core_forward_fn", slot.address)
            ctx = ffi.cast("void*", slot.ctx)

            def forward(_ctx, n, masks, values, policy, wdl, moves_left, fn=fn, ctx=ctx):
                with gate:
                    return fn(ctx, n, masks, values, policy, wdl, moves_left)
            callback = ffi.callback("lc0core_forward_fn", forward)
            keep.append(callback)
            wrapped.append(NativeSlot(int(ffi.cast("uintptr_t", callback)), 0, slot.max_batch))
        return wrapped
    return slots


def nps(net, threads: int, movetime: float) -> float:
    engine = Engine(net, implementation="native", Threads=threads)
    nodes, wall = 0, 0.0
    for spec in POSITIONS[:4]:
        board = board_for(spec)
        engine.new_game()
        started = time.perf_counter()
        nodes += engine.search(board, movetime=movetime).nodes
        wall += time.perf_counter() - started
    return nodes / wall


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weights")
    parser.add_argument("--threads", default="2", help="comma list")
    parser.add_argument("--movetime", type=float, default=3.0, help="seconds per position")
    args = parser.parse_args(argv)
    net = load_network(args.weights, backend="cuda-fp16")
    ffi, _ = native_core.load()
    original = net.backend.native_slots
    serial = serial_slots(original, ffi, threading.Lock(), [])
    try:
        for mode in ("streams", "serial", "streams", "serial"):
            net.backend.native_slots = original if mode == "streams" else serial
            for threads in (int(t) for t in args.threads.split(",")):
                print(f"{mode} threads {threads}: {nps(net, threads, args.movetime):.0f} nps", flush=True)
    finally:
        net.backend.native_slots = original
        net.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
