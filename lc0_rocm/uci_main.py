"""The `lc0-rocm` (or `lc0-rocm uci`) process: lc0's command-line flags set
UCI options, then stdin is read line by line into a UciEngine until `quit`,
end of input, or the GUI stops reading our output."""
from __future__ import annotations

import os
import signal
import sys
import threading

from lc0_rocm.outputs import silence_stdout
from lc0_rocm.uci import UciEngine
from lc0_rocm.uci_parse import UciError

# lc0 command-line flags -> UCI option names (`lc0-rocm --weights=X`)
FLAG_OPTIONS = {
    "weights": "WeightsFile", "w": "WeightsFile", "backend": "Backend", "b": "Backend",
    "backend-opts": "BackendOptions", "o": "BackendOptions", "threads": "Threads", "t": "Threads",
    "minibatch-size": "MinibatchSize", "nncache": "NNCacheSize", "logfile": "LogFile",
    "l": "LogFile", "syzygy-paths": "SyzygyPath", "s": "SyzygyPath",
    "move-overhead": "MoveOverheadMs", "multipv": "MultiPV", "verbose-move-stats": "VerboseMoveStats",
    "show-wdl": "UCI_ShowWDL", "show-movesleft": "UCI_ShowMovesLeft", "slowmover": "Slowmover",
}

USAGE = """usage: lc0-rocm [uci] [--weights=PATH] [--backend=NAME] [--threads=N] [--OptionName=VALUE ...]
Speaks UCI on stdin/stdout. Flags set UCI options before the first command:
lc0's long flags (--weights, --backend, --backend-opts, --threads, --minibatch-size,
--nncache, --logfile, --syzygy-paths, --move-overhead, ...) or any UCI option name."""


def parse_flags(argv: list[str]) -> list[tuple[str, str | None]]:
    """`--name=value`, `--name value`, `-w value` -> [(flag, value)]; a
    bare `--name` gives None (true for a check option, else an error)."""
    pairs = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg in ("-", "--"):
            raise UciError(f"unexpected argument {arg!r}")
        flag = arg.lstrip("-")
        if "=" in flag:
            flag, value = flag.split("=", 1)
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            value = argv[i + 1]
            i += 1
        else:
            value = None    # a bare flag: a check option's true
        pairs.append((flag, value))
        i += 1
    return pairs


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["uci"]:
        argv = argv[1:]
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0

    def write(line: str) -> None:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):   # the GUI closed our stdout: nobody to search for
            uci.output_lost()

    uci = UciEngine(write, cwd=os.getcwd())
    uci.on_output_lost = _interrupt_input
    try:
        flags = parse_flags(argv)
    except UciError as e:
        print(f"lc0-rocm: {e}\n{USAGE}", file=sys.stderr)
        return 2
    for flag, value in flags:
        name = FLAG_OPTIONS.get(flag.lower(), flag)
        if value is None:
            spec = next((s for n, s in uci.specs.items() if n.lower() == name.lower()), None)
            if spec is not None and spec.type != "check":
                print(f"lc0-rocm: --{flag} needs a value (--{flag}=VALUE)", file=sys.stderr)
                return 2
            value = "true"
        try:
            uci.set_option(name, value)
        except UciError as e:
            print(f"lc0-rocm: --{flag}: {e}", file=sys.stderr)
            return 2

    try:
        sys.stdin.reconfigure(errors="replace")   # stray bytes must not end the engine
    except (AttributeError, ValueError):
        pass
    status = 0
    try:
        for line in iter(sys.stdin.readline, ""):
            if not uci.handle(line):
                break
    except KeyboardInterrupt:
        status = 0 if uci.closed else 130   # closed: the GUI stopped reading (see _interrupt_input)
    finally:
        # quit, end of input (the GUI quit or died: lc0 exits too) or lost output;
        # from here on the output-lost signal has done its work (see _interrupt_input)
        uci.on_output_lost = None
        uci.shutdown()
        if _output_broken():
            silence_stdout()
    return status


def _interrupt_input() -> None:
    """The GUI closed our output while the main thread waits for input:
    a signal ends that wait (KeyboardInterrupt in main), and the engine exits."""
    if threading.current_thread() is threading.main_thread():
        return   # the input loop sees `closed` after this line
    try:
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    except (AttributeError, OSError, ValueError):
        pass


def _output_broken() -> bool:
    try:
        sys.stdout.flush()
        return False
    except (OSError, ValueError):
        return True
