#!/usr/bin/env python
"""Where the search's time goes: cProfile of `Engine.search(nodes=N)` over a
few positions, grouped into network / search phases.

    python scripts/profile_search.py [--net PATH] [--backend cpu] [--nodes 800]
    python scripts/profile_search.py --fake      # no network: search overhead only
"""
from __future__ import annotations

import argparse
import cProfile
import pathlib
import pstats
import sys
import time

import chess
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lc0_rocm import netfiles  # noqa: E402

POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "r3k2r/pp1n1ppp/2p1pn2/q7/1bPP4/2N1PN2/PP1B1PPP/R2QKB1R w KQkq - 1 9",
    "8/5pk1/6p1/8/3R4/6P1/5PKP/r7 b - - 3 41",
]

# (group, predicate on (file, function name)), first match wins.
GROUPS = [
    ("network forward (backend)", lambda f, n: "/backends/" in f or f.endswith("network.py")),
    ("leaf encoding + policy indices", lambda f, n: f.endswith("leaf_planes.py") or f.endswith("encoder.py")),
    ("python-chess move generation", lambda f, n: "chess/__init__" in f and ("legal" in n or "attack" in n
                                                                           or "_is_safe" in n or "scan" in n
                                                                           or "pin" in n or "castling" in n)),
    ("python-chess push/pop", lambda f, n: "chess/__init__" in f),
    ("prefetch (lc0's PrefetchIntoCache)", lambda f, n: f.endswith("core.py") and n == "_prefetch"),
    ("pick (PUCT selection, collisions)", lambda f, n: f.endswith("core.py") and n in (
        "_pick_node", "_pick", "_root_allowed_edges", "_try_start", "_cpuct", "_fpu", "_m_evaluator",
        "_gather_minibatch", "fast_log", "child", "visited_policy", "new_node")),
    ("leaf visit / terminal rules", lambda f, n: f.endswith("core.py") and n in ("_visit", "_extend_terminal")
        or f.endswith("positions.py")),
    ("priors (softmax, 16-bit, sort)", lambda f, n: f.endswith("fastmath.py") or n in (
        "_priors_batch", "_apply_nn_result", "set_priors", "create_edges", "_cache_put")),
    ("backup + certainty", lambda f, n: n in ("_backup", "_maybe_set_bounds", "_cancel_in_flight",
                                               "_update_current_best", "best_edges", "_compare_edges",
                                               "_edge_rank")),
    ("stoppers / smart pruning", lambda f, n: n in ("should_stop", "_stoppers_fire", "_smart_pruning_fires",
                                                     "_root_edge_stats", "_stops_midway")),
]


class ZeroNet:
    """Random outputs at no cost: isolates the search's own overhead."""
    input_format = 1
    has_moves_left = False

    class backend:
        name = "cpu"

    _cache: dict = {}

    def forward_packed(self, masks, values):
        n = len(masks)
        if n not in self._cache:       # made once per batch size: costs ~nothing later
            rng = np.random.default_rng(n)
            self._cache[n] = (rng.normal(size=(n, 1858)).astype(np.float32),
                              np.tile(np.array([0.4, 0.2, 0.4], np.float32), (n, 1)),
                              np.zeros(n, np.float32))
        return self._cache[n]


def self_times(run, sampler: bool) -> dict:
    """{(file, function): self seconds} for one call of run()."""
    if not sampler:
        profiler = cProfile.Profile()
        profiler.enable()
        run()
        profiler.disable()
        return {(f, func): st[2] for (f, _, func), st in pstats.Stats(profiler).stats.items()}
    from pyinstrument import Profiler
    profiler = Profiler(interval=0.0005)
    profiler.start()
    run()
    session = profiler.stop()
    totals: dict = {}
    stack = [session.root_frame()]
    while stack:
        frame = stack.pop()
        if frame is None:
            continue
        owner = frame.parent if frame.is_synthetic and frame.parent is not None else frame
        key = (owner.file_path or "", owner.function or "")
        own = frame.time - sum(child.time for child in frame.children)
        totals[key] = totals.get(key, 0.0) + max(own, 0.0)
        stack.extend(frame.children)
    return totals


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", default=str(netfiles.find_known_net("maia-1900") or "maia-1900.pb.gz"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--nodes", type=int, default=800)
    ap.add_argument("--fake", action="store_true", help="random network outputs (search overhead only)")
    ap.add_argument("--threads", type=int, default=0, help="Engine Threads (0: lc0's default)")
    ap.add_argument("--no-profile", action="store_true", help="only the unprofiled timing")
    ap.add_argument("--sampler", action="store_true",
                    help="sample with pyinstrument (less distortion than cProfile's per-call cost)")
    args = ap.parse_args(argv)

    from lc0_rocm.engine import Engine
    if args.fake:
        network = ZeroNet()
    else:
        from lc0_rocm.network import load_network
        network = load_network(args.net, backend=args.backend)
    engine = Engine(network, Threads=args.threads)

    def run():
        nodes = 0
        for fen in POSITIONS:
            engine.new_game()
            nodes += engine.search(chess.Board(fen), nodes=args.nodes).nodes
        return nodes

    start = time.perf_counter()
    nodes = run()
    wall = time.perf_counter() - start
    print(f"unprofiled: {nodes} nodes in {wall:.2f} s = {nodes / wall:.0f} nps "
          f"({1000 * wall / nodes:.3f} ms/node), {engine.search_threads()} thread(s), "
          f"minibatch {engine.minibatch_size()}")
    if args.no_profile:
        return 0

    totals = {name: 0.0 for name, _ in GROUPS}
    totals["other"] = 0.0
    others = []
    for (filename, func), tottime in self_times(run, args.sampler).items():
        for name, match in GROUPS:
            if match(filename, func):
                totals[name] += tottime
                break
        else:
            totals["other"] += tottime
            others.append((tottime, f"{pathlib.Path(filename).name}:{func}"))
    everything = sum(totals.values())
    how = "pyinstrument samples" if args.sampler else "cProfile"
    print(f"profiled ({how}, self time by group, {everything:.2f} s total):")
    for name, t in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * t / everything:5.1f}%  {t:6.2f} s  {name}")
    print("largest in `other`: " + ", ".join(f"{name} {t:.2f} s" for t, name in sorted(others)[::-1][:6]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
