"""`lc0-rocm analyse INPUT... -o OUT`: PGN games, EPD or FEN lines through the
network (`--eval`) or a search per position (`--nodes`, `--movetime`), into
JSONL, Parquet or an annotated PGN; resumable; local GPUs or a Ray cluster."""
from __future__ import annotations

import argparse
import os
import sys

from lc0_rocm.analysis.settings import MAX_SEARCHES

PROG = "lc0-rocm analyse"


def int_in(low: int, high: int):
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}..{high}, got {value}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Analyse every position of PGN games, EPD suites or FEN lists with a network, "
                    "many at once. Killed runs resume when the same command is run again "
                    "(finished shards are kept in OUT.parts/).")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="files: .pgn (games), .epd, anything else one FEN per line "
                        "(optionally `FEN moves m1 m2 ...`); .gz is read through gzip")
    p.add_argument("-o", "--output", action="append", required=True, metavar="OUT",
                   help="output file, its format by name: .jsonl (one record per line; also "
                        ".ndjson), .parquet (needs pyarrow), .pgn (games annotated with [%%eval] and ?! ? "
                        "??); written uncompressed; repeatable")
    p.add_argument("--eval", action="store_true",
                      help="the network only: WDL, Q, moves left and the policy's top moves")
    p.add_argument("--nodes", type=int, default=None, help="search each position to N visits")
    p.add_argument("--movetime", type=float, default=None, help="search each position for S seconds")
    p.add_argument("--top-k", type=int, default=3, help="--eval: policy moves per position (default 3)")
    p.add_argument("--every", type=int, default=1, metavar="N",
                   help="PGN: every N-th ply only (default: every position)")
    p.add_argument("--played", action="store_true",
                   help="PGN: only positions a move was played from (not each game's last)")
    p.add_argument("--input-kind", choices=("pgn", "epd", "fen"), default=None,
                   help="read every input as this kind (default: by file name)")
    p.add_argument("-w", "--weights", default=None,
                   help="network file or a fetched net's name (default: found like lc0 does)")
    p.add_argument("-b", "--backend", default="auto", help="backend (default: auto)")
    p.add_argument("--backend-opts", default="", help="backend options in lc0's syntax")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a search knob by lc0's UCI name (CPuct=2.5); repeatable")
    p.add_argument("--workers", type=int_in(1, 1024), default=None,
                   help="worker processes (default: one per GPU with a GPU backend, else 1); "
                        "with --ray, actors")
    p.add_argument("--searches", type=int_in(1, MAX_SEARCHES), default=None,
                   help="searches at once per worker (default: 256 on a GPU, 8 a core for a small "
                        "residual net there, 4 otherwise)")
    p.add_argument("--groups", type=int_in(1, 16), default=None,
                   help="groups of searches per worker, each with its own network stream and batched "
                        "calls (default on a GPU: 4 for a small residual net, 2 otherwise; 1 elsewhere)")
    p.add_argument("--batching", choices=("auto", "merge", "separate", "fixed"), default="auto",
                   help="how concurrent searches share network calls (default: by backend)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run the shards on a Ray cluster (ADDRESS, or the one ray.init() finds); "
                        "needs `pip install 'lc0-rocm[ray]'`")
    p.add_argument("--shard-size", type=int_in(1, 2**31 - 1), default=None,
                   help="distinct positions per shard (default 32768 with --eval, 2048 searching)")
    return p


def engine_options(items: list[str], parser) -> tuple:
    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            parser.error(f"--option wants NAME=VALUE, got {item!r}")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def main(argv=None) -> int:
    from lc0_rocm.analysis import runner
    from lc0_rocm.analysis.settings import AnalysisError, NetSource, Settings, resolved_weights
    from lc0_rocm.backends.base import BackendError
    from lc0_rocm.netfiles import NetNotFoundError
    from lc0_rocm.outputs import OutputPathError, check_writable
    from lc0_rocm.weights import WeightsError

    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.eval and args.nodes is None and args.movetime is None:
        parser.error("say what to compute: --eval, --nodes N or --movetime S")
    if args.eval and (args.nodes is not None or args.movetime is not None):
        parser.error("--eval runs the network only: leave out --nodes and --movetime")
    from lc0_rocm.analysis.inputs import check_input_files, kind_of
    try:
        check_input_files(args.inputs)
    except AnalysisError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    from lc0_rocm.analysis.writers import format_of
    try:
        formats = [format_of(path) for path in args.output]
    except AnalysisError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    sources = {os.path.realpath(path) for path in args.inputs}
    clash = [path for path in args.output if os.path.realpath(path) in sources]
    if clash:
        parser.error(f"output {clash[0]} is also an input: write the results elsewhere")
    has_pgn = any((args.input_kind or kind_of(path)) == "pgn" for path in args.inputs)
    if "pgn" in formats and not has_pgn:
        parser.error("an annotated PGN output needs PGN input")
    if not has_pgn and (args.every != 1 or args.played):
        print(f"{PROG}: note: --every and --played choose among a PGN game's positions; "
              f"every line of FEN or EPD input is analysed", file=sys.stderr)
    try:
        for path in args.output:
            check_writable(path, "output")
        settings = Settings("eval" if args.eval else "search", nodes=args.nodes, movetime=args.movetime,
                            top_k=args.top_k, options=engine_options(args.option, parser),
                            batching=args.batching, every=args.every, played=args.played)
        if settings.mode == "search":
            from lc0_rocm.analysis.many import check_options   # knob names and values, before any work
            check_options(settings.search_options())
        source = NetSource(resolved_weights(args.weights, args.backend), args.backend, args.backend_opts)
        workers = args.workers
        if workers is None and args.ray is None:
            workers = runner.AUTO              # counted beside the planning
        result = runner.run(args.inputs, args.output, settings, source, kind=args.input_kind,
                            workers=workers, searches=args.searches, groups=args.groups,
                            ray_address=args.ray or None, use_ray=args.ray is not None,
                            shard_size=args.shard_size)
    except (ValueError, OutputPathError, NetNotFoundError, WeightsError, BackendError, AnalysisError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    rate = result.computed / result.seconds if result.seconds > 0 else 0.0
    refused = f", {result.refused} of them refused" if result.refused else ""
    print(f"{PROG}: {result.positions} positions ({result.distinct} distinct{refused}, {result.computed} "
          f"computed in this run, {rate:.1f}/s) in {result.seconds:.1f} s", file=sys.stderr)
    for path, count in result.outputs.items():
        print(f"{PROG}: wrote {path} ({count} {'games' if path.lower().endswith('.pgn') else 'records'})",
              file=sys.stderr)
    if result.errors:
        print(f"{PROG}: {result.errors} malformed input(s) skipped, listed in "
              f"{runner.errors_path(args.output[0])}", file=sys.stderr)
    return 0
