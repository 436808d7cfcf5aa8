"""`lc0-rocm` command line: no arguments runs the UCI engine, otherwise a
subcommand. Each subcommand lives in its own module as main(argv) -> int and
is imported only when used."""
from __future__ import annotations

import importlib
import sys

from lc0_rocm.outputs import silence_stdout

# name -> (module, function, one-line help)
COMMANDS = {
    "uci": ("lc0_rocm.uci_main", "main", "run the UCI engine (the default)"),
    "bench": ("lc0_rocm.bench", "main", "search fixed positions and report nps, like `lc0 benchmark`"),
    "benchmark": ("lc0_rocm.bench", "benchmark_main", "like bench with `lc0 benchmark`'s defaults (34 positions, 10 s each)"),
    "backendbench": ("lc0_rocm.backendbench", "main", "raw network throughput over batch sizes"),
    "describenet": ("lc0_rocm.describe", "main", "describe a network file, like `lc0 describenet`"),
    "make-net": ("lc0_rocm.makenet", "main", "write a random-weight test net of a preset shape"),
    "fetch-net": ("lc0_rocm.netfiles", "fetch_main", "put a known net into the user's cache"),
    "build-native": ("lc0_rocm.backends.native_build", "build_main", "compile the GPU library"),
    "cache": ("lc0_rocm.netfiles", "cache_main", "show (or --clear) the cached nets and native builds"),
    "analyse": ("lc0_rocm.analysis.cli", "main", "analyse PGN games, EPD or FEN files in batches (resumable)"),
    "suite": ("lc0_rocm.analysis.suite", "main", "score an EPD test suite (bm, am, c0)"),
}
INTERRUPTED = 130   # the shell's code for a command stopped by Ctrl-C (128 + SIGINT)


def usage() -> str:
    lines = ["usage: lc0-rocm [COMMAND] [ARGS]   (lc0-rocm --version, lc0-rocm COMMAND --help)",
             "", "commands:"]
    lines += [f"  {name:<13} {help_}" for name, (_, _, help_) in COMMANDS.items()]
    lines += ["", "With no command, lc0-rocm speaks UCI on stdin/stdout."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run a command; output cut short by a closed pipe (`lc0-rocm -h | head -1`)
    ends it quietly instead of with a BrokenPipeError traceback."""
    try:
        status = _run(argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        silence_stdout()
        return 0


def _run(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if argv and argv[0] in ("-V", "--version", "version"):
        from lc0_rocm import __version__
        print(f"lc0-rocm {__version__}")
        return 0
    if not argv or argv[0].startswith("-"):
        name, rest = "uci", argv
    else:
        name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"lc0-rocm: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module, func, _ = COMMANDS[name]
    try:
        return int(getattr(importlib.import_module(module), func)(rest) or 0)
    except KeyboardInterrupt:   # Ctrl-C: the command's own cleanup has run
        print(f"\nlc0-rocm {name}: interrupted", file=sys.stderr)
        return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
