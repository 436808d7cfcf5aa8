"""A real UCI engine process driven through its pipes, for the scripts that
time or soak one (soak_uci.py, stop_latency.py): a reader thread stamps
each output line with its arrival time, and every wait is bounded."""
from __future__ import annotations

import os
import queue
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UciPipe:
    def __init__(self, cmd: list[str], timeout: float, stderr=None):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     text=True, bufsize=1, env=env, cwd=ROOT)
        self.timeout = timeout
        self.stamp = 0.0                  # arrival time of the line `until` stopped at
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def send(self, line: str) -> float:
        """Writes one command; returns when it was written (time.monotonic)."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return time.monotonic()

    def until(self, prefix: str, timeout: float | None = None) -> list[str]:
        """Lines up to and including the first that starts with `prefix`."""
        seen = []
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            try:
                stamp, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise RuntimeError(f"no {prefix!r} in time; last lines {seen[-5:]}") from None
            if line is None:
                raise RuntimeError(f"engine exited (rc {self.proc.poll()}) waiting for {prefix!r}")
            seen.append(line)
            if line.startswith(prefix):
                self.stamp = stamp
                return seen

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return float("nan")

    def quit(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
