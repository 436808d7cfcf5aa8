#!/usr/bin/env python
"""Analysis at scale, measured (issue 72's speed acceptance), per net:

  eval      `analyse --eval`'s network stage (rows -> native encoding ->
            forward -> top moves, columns) in positions/s, beside the raw
            forward pass at batch 256 (what `backendbench` times), both on
            the same positions, and their ratio;
  nodes N   `lc0-rocm analyse --nodes N` of the positions (one worker, one
            GPU, the whole command: plan, searches, JSONL) in positions/s,
            the GPU's busy share of the wall time (NVML / nvidia-smi /
            rocm-smi sampled while it runs; the mux's own count beside it),
            and a python-chess loop driving lc0 over UCI at the same nodes
            (`go nodes N` per position, SmartPruningFactor 0 on both sides)
            on --uci-positions of them, and the ratio; with --pass-log also
            the device's own pass times (events around every pass): the
            share of the searching stage and of the whole command in which
            some pass ran (issue 70's measure of a busy GPU).

Positions: real games, those of --pgn (default scripts/data/london-1851.pgn,
the London 1851 tournament), every position of each game in order; with
--pgn '' games played by the first net whose name holds "maia" (else the
first net), sampling each move from its policy, from a fixed seed. The UCI
loop takes --uci-positions of them in --uci-stretches runs of successive
positions spread evenly over the set, a new game (`ucinewgame`) at the start
of each run only: within a run lc0 keeps its NN cache (and its tree where
the position continues the last), as a loop over a game's positions would,
so it reuses what the position before computed as our searches do.

    python scripts/analyse_bench.py --nets t82.pb.gz maia-1900.pb.gz -b cuda-fp16 \\
        --lc0 .anchors/lc0-master/run-lc0.sh --lc0-backend cuda-fp16 --positions 2000 --json out.json
    python scripts/analyse_bench.py --nets '' -b random --positions 60 --nodes 20 --no-uci   # CPU check

Prints a table; --json writes every figure and the machine.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import chess
import chess.engine
import chess.pgn
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lc0_rocm.analysis import runner  # noqa: E402
from lc0_rocm.analysis.evaluate import RowEvaluator  # noqa: E402
from lc0_rocm.analysis.inputs import board_of_row, board_position  # noqa: E402
from lc0_rocm.analysis.settings import NetSource, Settings  # noqa: E402
from lc0_rocm.network import load_network  # noqa: E402


# ---------------------------------------------------------------- positions
def positions_from_pgn(path: str, count: int) -> tuple[list[str], str]:
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        while len(rows) < count and (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            for move in game.mainline_moves():
                rows.append(board_position("bench", 0, board).row)
                board.push(move)
    return rows[:count], f"{path} (every position of its games)"


def positions_from_play(net_path: str | None, backend: str, count: int, seed: int = 72) -> tuple[list[str], str]:
    """Games whose moves are sampled from the net's policy, 64 at a time."""
    rng = random.Random(seed)
    rows: list[str] = []
    with load_network(net_path or None, backend=backend if net_path else "random") as net:
        boards = [chess.Board() for _ in range(64)]
        while len(rows) < count:
            live = [b for b in boards if not b.is_game_over(claim_draw=True) and b.ply() < 160]
            if not live:
                boards = [chess.Board() for _ in range(64)]
                continue
            for board, ev in zip(live, net.evaluate_batch(live)):
                rows.append(board_position("bench", 0, board).row)
                moves, probs = zip(*ev.policy.items())
                board.push(rng.choices(moves, probs)[0])
            boards = live
    name = os.path.basename(net_path) if net_path else "the random backend"
    return rows[:count], f"games sampled from {name}'s policy (seed {seed})"


# ---------------------------------------------------------------- GPU busy
class BusySampler:
    """The GPU's utilisation (share of time a kernel ran) sampled every 0.1 s."""

    def __init__(self, device: int = 0):
        self.samples: list[float] = []
        self.device = device
        self._stop = threading.Event()
        self._thread = None
        self.source = self._pick()

    def _pick(self) -> str | None:
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = (pynvml, pynvml.nvmlDeviceGetHandleByIndex(self.device))
            return "nvml"
        except Exception:  # noqa: BLE001 - try the command-line tools
            pass
        for tool in ("nvidia-smi", "rocm-smi"):
            if shutil.which(tool):
                return tool
        return None

    def _read(self) -> float | None:
        try:
            if self.source == "nvml":
                pynvml, handle = self._nvml
                return float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
            if self.source == "nvidia-smi":
                out = subprocess.run(["nvidia-smi", f"--id={self.device}", "--query-gpu=utilization.gpu",
                                      "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                     timeout=5).stdout
                return float(out.split()[0])
            if self.source == "rocm-smi":
                out = subprocess.run(["rocm-smi", "-d", str(self.device), "--showuse", "--csv"],
                                     capture_output=True, text=True, timeout=5).stdout
                return float(out.strip().splitlines()[-1].split(",")[-1])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            return None
        return None

    def __enter__(self):
        if self.source:
            def loop():
                while not self._stop.wait(0.1):
                    value = self._read()
                    if value is not None:
                        self.samples.append(value)
            self._thread = threading.Thread(target=loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.samples)) if self.samples else None


# ---------------------------------------------------------------- measuring
def cpu_seconds() -> float:
    """User and system time of this process's threads and its finished
    children: over a stage's wall time, the cores the stage kept busy."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_eval(net_path, backend, rows, eval_positions, seconds) -> dict:
    from lc0_rocm.backendbench import time_batch_size
    with load_network(net_path or None, backend=backend) as net:
        big = (rows * (eval_positions // len(rows) + 1))[:eval_positions]
        evaluator = RowEvaluator(net, top_k=3)
        evaluator.run(big[:4096])                     # warm-up (graphs, tuner)
        t0 = time.perf_counter()
        cols = evaluator.run(big)
        stage = time.perf_counter() - t0
        assert len(cols["best"]) == len(big)
        boards = [board_of_row(r) for r in rows[:1024]]
        from lc0_rocm import encoder
        masks, values, _ = encoder.encode_batch_packed(boards, net.input_format)
        times = time_batch_size(net.backend.forward_packed_into, (masks, values), 256, seconds,
                                host_empty=net.backend.host_empty)
    forward = 256 / float(np.median(times))
    return {"positions": len(big), "seconds": stage, "eval_pos_per_s": len(big) / stage,
            "forward_b256_pos_per_s": forward, "ratio": len(big) / stage / forward}


class PassLogs:
    """The device's own record of the analysis's passes (--pass-log): each
    network the run loads starts its backend's pass log (device events
    around every pass, GPU backends and `sim`) as it is made, and keeps the
    log as the backend closes. The share of the wall time in which some pass
    ran is issue 70's measure of a busy GPU, here over the searching stage
    and over the whole command (the log starts once the net is loaded)."""

    def __init__(self) -> None:
        self.logs: list = []
        self.starts: list[float] = []      # each log's clock start, Unix seconds (to line up with smi logs)
        self._load = None

    def __enter__(self) -> "PassLogs":
        from lc0_rocm.analysis.settings import NetSource
        self._load = load = NetSource.load
        logs, starts = self.logs, self.starts

        def load_and_log(source, extra_opts: str = ""):
            net = load(source, extra_opts)
            backend = getattr(net, "backend", None)
            if hasattr(backend, "pass_log_start"):
                backend.pass_log_start()
                starts.append(time.time())
                close = backend.close

                def close_after_reading(*args, **kwargs):
                    logs.append(backend.pass_log())
                    return close(*args, **kwargs)
                backend.close = close_after_reading
            return net
        NetSource.load = load_and_log
        return self

    def __exit__(self, *exc) -> None:
        from lc0_rocm.analysis.settings import NetSource
        NetSource.load = self._load

    def figures(self, wall_s: float, searching_s: float) -> dict | None:
        if not self.logs:
            return None
        busy_ms = sum(log.busy_ms() for log in self.logs)
        passes = sum(len(log) for log in self.logs)
        rows = sum(int(log.positions.sum()) for log in self.logs)
        return {"passes": passes, "busy_ms": busy_ms, "summed_ms": sum(log.summed_ms() for log in self.logs),
                "mean_batch": rows / passes if passes else 0.0,
                "busy_pct_whole": 100 * busy_ms / 1e3 / wall_s if wall_s else None,
                "busy_pct_searching": 100 * busy_ms / 1e3 / searching_s if searching_s else None,
                "log_start_unix": self.starts, "full_passes_by_tenth": self.full_passes_by_tenth()}

    def full_passes_by_tenth(self) -> dict | None:
        """The passes of the most frequent size (a fixed call's), in ten
        slices of the run's time: mean milliseconds each. Whether a slow run's
        passes are slow throughout or only until something warms up. (Each
        log's clock starts at its net's load: one worker, one log.)"""
        begin = np.concatenate([log.begin_ms for log in self.logs])
        if not len(begin):
            return None
        end = np.concatenate([log.end_ms for log in self.logs])
        rows = np.concatenate([log.positions for log in self.logs])
        sizes, counts = np.unique(rows, return_counts=True)
        size = int(sizes[np.argmax(counts)])
        keep = rows == size
        begin, took = begin[keep], (end - begin)[keep]
        edges = np.linspace(begin.min(), begin.max(), 11)
        slice_of = np.clip(np.searchsorted(edges, begin, side="right") - 1, 0, 9)
        means = [float(took[slice_of == k].mean()) if np.any(slice_of == k) else None for k in range(10)]
        return {"rows": size, "passes": int(keep.sum()), "mean_ms": means}


def measure_analyse(net_path, backend, backend_opts, rows, nodes, folder, searches, groups=None,
                    options: tuple = (), pass_log: bool = False) -> dict:
    path = pathlib.Path(folder) / "positions.fen"
    path.write_text("\n".join(rows) + "\n")
    out = pathlib.Path(folder) / f"nodes{nodes}.jsonl"
    settings = Settings("search", nodes=nodes, options=options)
    source = NetSource(net_path or None, backend, backend_opts)
    logs = PassLogs()
    with BusySampler() as busy, (logs if pass_log else contextlib.nullcontext()):
        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        result = runner.run([str(path)], [str(out)], settings, source, workers=1, searches=searches, groups=groups,
                            stream=open(os.devnull, "w"))
        wall = time.perf_counter() - t0
        cpu = cpu_seconds() - cpu0
    records = [json.loads(line) for line in open(out)]
    mux_busy = sum(m["busy_s"] for m in result.mux)
    groups = max(1, len(result.mux))
    # The searching stage alone (the muxes' lifetime: network loaded, plan
    # made), as the UCI loop's lc0 is started and warm before its clock.
    searching = max((m["wall_s"] for m in result.mux), default=0.0)
    return {"positions": len(records), "distinct": result.distinct, "seconds": wall,
            "pos_per_s": len(records) / wall, "gpu_busy_pct": busy.mean, "busy_source": busy.source,
            "host_cores_busy": cpu / wall,
            "searching_s": searching, "searching_pos_per_s": len(records) / searching if searching else None,
            "mux_forward_share": mux_busy / (searching * groups) if result.mux and searching else None,
            "memo_hits": result.mux[0].get("memo_hits") if result.mux else None,
            "memo_lookups": result.mux[0].get("memo_lookups") if result.mux else None,
            "mux": result.mux, "mean_nodes": float(np.mean([r["nodes"] for r in records])),
            "pass_log": logs.figures(wall, searching)}


def rounds_line(a: dict) -> str:
    """Where the muxes' rounds and the searches' threads spend their time."""
    mux = a["mux"]
    rounds = sum(m["rounds"] for m in mux)
    if not rounds:
        return "no rounds"
    busy, gap = sum(m["busy_s"] for m in mux), sum(m["gap_s"] for m in mux)
    in_rounds = sum(m["round_s"] for m in mux)
    ready, ready_s = sum(m["ready_gaps"] for m in mux), sum(m["ready_gap_s"] for m in mux)
    rows = sum(m["rows"] for m in mux)
    times = {k: mux[0].get(f"search_{k}_s", 0.0) for k in ("gather", "backup", "network")}
    threads = {k: mux[0].get(f"threads_{k}_s", 0.0) for k in ("job_wait", "setup", "search", "result")}
    return (f"{rounds} rounds, {rows / rounds:.0f} rows each, {1e3 * in_rounds / rounds:.3f} ms a round "
            f"({1e3 * busy / rounds:.3f} in calls) + {1e3 * gap / rounds:.3f} ms between; {ready} began at once after the last "
            f"({1e3 * ready_s / max(1, ready):.3f} ms hand-over); searches' thread seconds: gather "
            f"{times['gather']:.1f}, backup {times['backup']:.1f}, network {times['network']:.1f}; "
            f"waiting for a job {threads['job_wait']:.1f}, setting up {threads['setup']:.1f}, searching "
            f"{threads['search']:.1f}, keeping results {threads['result']:.1f}")


def uci_stretches(rows: list, count: int, stretches: int) -> list[list]:
    """`count` rows in `stretches` runs of successive rows spread evenly
    over `rows`."""
    stretches = max(1, min(stretches, count))
    length = max(1, count // stretches)
    gap = max(length, len(rows) // stretches)
    return [rows[k * gap:k * gap + length] for k in range(stretches) if rows[k * gap:k * gap + length]]


def measure_uci(lc0: str, lc0_backend: str, net_path: str, runs: list[list], nodes) -> dict:
    command = [lc0, f"--weights={net_path}", f"--backend={lc0_backend}"]
    engine = chess.engine.SimpleEngine.popen_uci(command, stderr=subprocess.DEVNULL)
    try:
        if "SmartPruningFactor" in engine.options:
            engine.configure({"SmartPruningFactor": 0})
        engine.analyse(board_of_row(runs[0][0]), chess.engine.Limit(nodes=nodes), game="warm-up")
        counted = []      # lc0's nodes a search (its last info: a reused tree's visits count)
        t0 = time.perf_counter()
        for k, run in enumerate(runs):
            for row in run:       # one game per run: ucinewgame (cache cleared) only at its start
                info = engine.analyse(board_of_row(row), chess.engine.Limit(nodes=nodes), game=k)
                if "nodes" in info:
                    counted.append(info["nodes"])
        wall = time.perf_counter() - t0
    finally:
        engine.quit()
    positions = sum(len(run) for run in runs)
    return {"positions": positions, "runs": len(runs), "seconds": wall, "pos_per_s": positions / wall,
            "mean_nodes": float(np.mean(counted)) if counted else None}


def _option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nets", nargs="+", required=True, help="net files ('' = no net, random backend)")
    p.add_argument("-b", "--backend", default="auto")
    p.add_argument("--backend-opts", default="")
    p.add_argument("--positions", type=int, default=2000)
    p.add_argument("--pgn", default=str(ROOT / "scripts" / "data" / "london-1851.pgn"),
                   help="real games to take the positions from (default: the London 1851 tournament's); "
                        "'' plays games with the first maia net instead")
    p.add_argument("--nodes", type=int, nargs="+", default=[100, 800])
    p.add_argument("--searches", type=int, default=None, help="searches at once (default: analyse's)")
    p.add_argument("--groups", type=int, default=None, help="groups of searches, a stream each (default: analyse's)")
    p.add_argument("--eval-positions", type=int, default=200000, help="rows for the eval measurement")
    p.add_argument("--seconds", type=float, default=3.0, help="forward-pass timing at batch 256")
    p.add_argument("--lc0", default=None, help="lc0 binary (or run-lc0.sh) for the python-chess UCI loop")
    p.add_argument("--lc0-backend", default="cuda-fp16")
    p.add_argument("--uci-positions", type=int, default=200, help="positions the UCI loop searches")
    p.add_argument("--uci-stretches", type=int, default=4,
                   help="runs of successive positions the UCI loop's positions come in (a new game each)")
    p.add_argument("--no-uci", action="store_true", help="skip the UCI loop")
    p.add_argument("--no-eval", action="store_true", help="skip the eval measurement")
    p.add_argument("-o", "--option", action="append", default=[], type=_option, metavar="NAME=VALUE",
                   help="a search option for analyse (lc0's name), e.g. -o MaxPrefetch=32; repeatable")
    p.add_argument("--no-memo", action="store_true",
                   help="searches without the shared network answers (an A/B of the memo)")
    p.add_argument("--pass-log", action="store_true",
                   help="also time every pass on the device (GPU backends, sim): the share of the wall time "
                        "some pass ran, over the searching stage and the whole command")
    p.add_argument("--json", default=None, help="write every figure here")
    args = p.parse_args(argv)
    if args.no_memo:
        from lc0_rocm.analysis import many
        many.ManySearch._make_memo = lambda self, wanted: None
    if not args.no_uci and not args.lc0:
        p.error("give --lc0 PATH (lc0 for the UCI loop) or --no-uci")

    # A machine's first use builds the native chess core and keeps an
    # inflated copy of each big gzipped net (weights.inflated): done here,
    # before any clock, so the figures are those of every later command.
    from lc0_rocm import native_core
    from lc0_rocm.weights import load_weights
    native_core.available()            # builds it; without a compiler analysis runs the Python search
    for net in args.nets:
        if net:
            load_weights(net)
    play_net = next((n for n in args.nets if "maia" in os.path.basename(n)), args.nets[0])
    if args.pgn:
        rows, origin = positions_from_pgn(args.pgn, args.positions)
        origin = f"{os.path.relpath(args.pgn, ROOT) if args.pgn.startswith(str(ROOT)) else args.pgn} " \
                 "(every position of its first games, in order)"
    else:
        rows, origin = positions_from_play(play_net, args.backend, args.positions)
    from lc0_rocm.backendbench import machine_info
    report = {"positions": len(rows), "origin": origin, "backend": args.backend, "machine": machine_info(),
              "options": dict(args.option), "memo": not args.no_memo,
              "command": " ".join([sys.executable, *sys.argv]), "nets": {}}
    print(f"{len(rows)} positions: {origin}", flush=True)
    table = [f"{'net':<22} {'what':<10} {'ours pos/s':>11} {'reference':>11} {'ratio':>7} {'GPU busy':>9} "
             f"{'cores':>6}"]
    with tempfile.TemporaryDirectory(prefix="analyse-bench-") as folder:
        for net in args.nets:
            name = os.path.basename(net) or "random"
            figures: dict = {}
            if not args.no_eval:
                e = measure_eval(net, args.backend, rows, args.eval_positions, args.seconds)
                figures["eval"] = e
                table.append(f"{name[:22]:<22} {'eval':<10} {e['eval_pos_per_s']:>11.0f} "
                             f"{e['forward_b256_pos_per_s']:>11.0f} {e['ratio']:>7.2f} {'':>9}")
            for nodes in args.nodes:
                a = measure_analyse(net, args.backend, args.backend_opts, rows, nodes, folder, args.searches,
                                    args.groups, tuple(args.option), args.pass_log)
                u = None
                if not args.no_uci:       # spread over the positions: openings to endings
                    runs = uci_stretches(rows, args.uci_positions, args.uci_stretches)
                    u = measure_uci(args.lc0, args.lc0_backend, net, runs, nodes)
                figures[f"nodes{nodes}"] = {"analyse": a, "uci_loop": u}
                busy = f"{a['gpu_busy_pct']:.0f}%" if a["gpu_busy_pct"] is not None else "n/a"
                ratio = f"{a['pos_per_s'] / u['pos_per_s']:.1f}" if u else "-"
                reference = f"{u['pos_per_s']:.1f}" if u else "-"
                table.append(f"{name[:22]:<22} {f'nodes {nodes}':<10} {a['pos_per_s']:>11.1f} "
                             f"{reference:>11} {ratio:>7} {busy:>9} {a['host_cores_busy']:>6.1f}")
                print(table[-1], flush=True)
                if a["searching_pos_per_s"]:
                    share = a["mux_forward_share"]
                    ratio = f"{a['searching_pos_per_s'] / u['pos_per_s']:.1f}" if u else "-"
                    table.append(f"{'':<22} {'searching':<10} {a['searching_pos_per_s']:>11.1f} "
                                 f"{reference:>11} {ratio:>7} {100 * share:>8.0f}%")
                    print(table[-1], flush=True)
                if a["pass_log"]:
                    g = a["pass_log"]
                    table.append(f"{'':<22} {'passes':<10} {g['passes']} passes, {g['mean_batch']:.0f} rows each: "
                                 f"some pass running {g['busy_pct_searching']:.1f} % of the searching stage, "
                                 f"{g['busy_pct_whole']:.1f} % of the whole command (passes summed "
                                 f"{g['summed_ms'] / 1e3:.3f} s)")
                    print(table[-1], flush=True)
                    tenths = g["full_passes_by_tenth"]
                    if tenths:
                        ms = " ".join("-" if t is None else f"{t:.2f}" for t in tenths["mean_ms"])
                        table.append(f"{'':<22} {'by tenth':<10} {tenths['passes']} passes of {tenths['rows']} rows, "
                                     f"ms each in each tenth of the run: {ms}")
                        print(table[-1], flush=True)
                if a["mux"]:
                    table.append(f"{'':<22} {'rounds':<10} {rounds_line(a)}")
                    print(table[-1], flush=True)
                if a["memo_lookups"]:
                    table.append(f"{'':<22} {'memo':<10} {a['memo_hits']:>11} of {a['memo_lookups']} requests "
                                 f"({100 * a['memo_hits'] / a['memo_lookups']:.1f} %) answered without the network, "
                                 f"{(a['memo_lookups'] - a['memo_hits']) / a['positions']:.1f} rows a position "
                                 f"computed; room for {a['mux'][0].get('memo_answers')} answers")
                    print(table[-1], flush=True)
                lc0_nodes = f", lc0 {u['mean_nodes']:.1f}" if u and u.get("mean_nodes") is not None else ""
                table.append(f"{'':<22} {'nodes':<10} a search's mean: ours {a['mean_nodes']:.1f}{lc0_nodes}")
                print(table[-1], flush=True)
            report["nets"][net or "random"] = figures
    print("\n".join(table))
    print("reference: eval -> the forward pass alone at batch 256; nodes N -> a python-chess loop over "
          "lc0 (UCI) at the same nodes")
    report["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"peak memory of this process (every run above): {report['peak_rss_mib']} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
