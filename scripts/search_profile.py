#!/usr/bin/env python
"""Where the native search's time goes, per position and thread count:
nodes per second, network calls and their mean size, and the share of
wall time spent at the network (summed over threads), gathering, backing
up, expanding and (search threads with a slot each) picking with the
pickers' lock shared, all summed over threads: the tree is held
exclusively for gather - expand - shared + backup; wait% is search threads
waiting for the tree mutex (summed). For choosing Threads and finding the
bottleneck. coll% and idle% are the network calls whose
gathering ended short: the collision budget spent (lc0's rule: a pick
that meets leaves in flight counts against it) or the network idle.

    python scripts/search_profile.py --weights maia-1900.pb.gz --backend cuda-fp16 --threads 1,2,3
"""
from __future__ import annotations

import argparse
import sys
import time

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    from lc0_rocm.bench import POSITIONS, board_for
    from lc0_rocm.engine import Engine
    from lc0_rocm.network import load_network

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-w", "--weights", default=None)
    parser.add_argument("-b", "--backend", default="random")
    parser.add_argument("-o", "--backend-opts", default="")
    parser.add_argument("--threads", default="1,2", help="comma list")
    parser.add_argument("--movetime", type=float, default=2.0, help="seconds per position")
    parser.add_argument("--num-positions", type=int, default=4)
    parser.add_argument("--positions", default="", help="comma list of bench position numbers (1-based) instead")
    parser.add_argument("--minibatch-size", type=int, default=0, help="0: the backend's suggestion")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=V1[/V2...]",
                        help="a search option by lc0's name, with values to try in turn (repeatable)")
    args = parser.parse_args(argv)
    net = load_network(args.weights, backend=args.backend, backend_opts=args.backend_opts or None)
    print(f"net {args.weights or '(none)'}, backend {args.backend} {args.backend_opts}")
    print(f"{'threads':>7} {'pos':>3} {'nps':>9} {'nodes':>9} {'evals':>8} {'calls':>6} {'mean':>6} "
          f"{'net%':>6} {'gather%':>8} {'backup%':>8} {'expand%':>8} {'shared%':>8} {'wait%':>6} {'coll%':>6} {'idle%':>6} {'depth':>6} {'max':>4}  (net% summed over threads)")
    grid = [{}]
    for item in args.set:
        name, _, values = item.partition("=")
        grid = [dict(g, **{name: float(v) if "." in v else int(v)}) for g in grid for v in values.split("/")]
    runs = [(int(t), g) for t in args.threads.split(",") for g in grid]
    try:
        for threads, options in runs:
            if options:
                print("options", options)
            knobs = {"MinibatchSize": args.minibatch_size, **options}    # --set wins
            engine = Engine(net, implementation="native", Threads=threads, **knobs)
            total_nodes, total_s = 0, 0.0
            chosen = [int(x) - 1 for x in args.positions.split(",")] if args.positions else \
                range(args.num_positions)
            for i, spec in ((i, POSITIONS[i]) for i in chosen):
                board = board_for(spec)
                engine.new_game()
                started = time.perf_counter()
                result = engine.search(board, movetime=args.movetime)
                wall = time.perf_counter() - started
                s = engine._native.run_stats()
                calls = max(1, s["batches"])
                print(f"{threads:7d} {i + 1:3d} {result.nodes / wall:9.0f} {result.nodes:9d} {s['nn_evals']:8d} "
                      f"{s['batches']:6d} {s['nn_evals'] / calls:6.1f} {100 * s['network_s'] / wall:6.1f} "
                      f"{100 * s['gather_s'] / wall:8.1f} {100 * s['backup_s'] / wall:8.1f} {100 * s['expand_s'] / wall:8.1f} "
                      f"{100 * s['pick_shared_s'] / wall:8.1f} {100 * s['tree_wait_s'] / wall:6.1f} "
                      f"{100 * s['collision_ends'] / calls:6.1f} "
                      f"{100 * s['idle_ends'] / calls:6.1f} "
                      f"{s['cum_depth'] / max(1, s['total_playouts']):6.1f} {s['max_depth']:4d}", flush=True)
                total_nodes += result.nodes
                total_s += wall
            print(f"{threads:7d} all {total_nodes / total_s:9.0f}")
    finally:
        net.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
