"""The real engine (`python -m lc0_rocm`) as a GUI sees it: a process with
pipes, every read bounded by a timeout, so a hung engine fails a test
instead of hanging pytest."""
from __future__ import annotations

import os
import queue
import select
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ_TIMEOUT_S = 90.0   # generous: the cpu backend shares two cores with other work


class UciProcess:
    def __init__(self, cwd, args=(), env=None):
        env = dict(os.environ, **(env or {}))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
        env.setdefault("LC0ROCM_CACHE", os.path.join(str(cwd), "cache"))
        env.setdefault("XDG_DATA_HOME", str(cwd))
        self.proc = subprocess.Popen([sys.executable, "-m", "lc0_rocm", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.seen: list[str] = []       # every line read so far
        self.arrived: list[tuple[float, str]] = []   # (time.monotonic(), line) as each came
        self.stderr: list[bytes] = []
        self._stop_reading = threading.Event()
        self._stdout_thread = threading.Thread(target=self._pump_stdout, daemon=True)
        self._stdout_thread.start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump_stdout(self):
        """Lines into self.lines; polls, so that close_stdout() can end it."""
        fd = self.proc.stdout.fileno()
        pending = b""
        while not self._stop_reading.is_set():
            try:
                ready = select.select([fd], [], [], 0.1)[0]
            except (OSError, ValueError):
                break
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            now = time.monotonic()
            for raw in lines:
                line = raw.decode("utf-8", errors="replace").rstrip("\r")
                self.arrived.append((now, line))
                self.lines.put(line)
        self.lines.put(None)

    def close_stdout(self) -> None:
        """What a killed GUI does to the engine's output: nobody reads it."""
        self._stop_reading.set()
        self._stdout_thread.join(timeout=10)
        self.proc.stdout.close()

    def _pump_stderr(self):
        try:
            for raw in self.proc.stderr:
                self.stderr.append(raw)
        except (OSError, ValueError):
            pass

    def send(self, line) -> None:
        data = line if isinstance(line, bytes) else line.encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_line(self, timeout=READ_TIMEOUT_S) -> str | None:
        """The next line; None once the engine closed its output."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"engine silent for {timeout} s; last lines {self.seen[-8:]}") from None
        if line is not None:
            self.seen.append(line)
        return line

    def read_until(self, prefix, count=1, timeout=READ_TIMEOUT_S) -> list[str]:
        """Lines up to the `count`-th that starts with `prefix`."""
        got, hits = [], 0
        deadline = time.monotonic() + timeout
        while hits < count:
            line = self.read_line(max(deadline - time.monotonic(), 0.01))
            if line is None:
                raise AssertionError(f"engine exited (rc {self.proc.poll()}) before {prefix!r}; "
                                     f"last lines {self.seen[-8:]}; stderr {self.stderr_text()[-1500:]}")
            got.append(line)
            hits += line.startswith(prefix)
        return got

    def quiet_for(self, seconds) -> list[str]:
        """Lines that arrive within `seconds`."""
        got = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            got.append(line)
        return got

    def sync(self) -> list[str]:
        """isready -> the lines up to its readyok."""
        self.send("isready")
        return self.read_until("readyok")

    def start(self, weights, backend="cpu"):
        self.send("uci")
        self.read_until("uciok")
        if weights is not None:
            self.send(f"setoption name WeightsFile value {weights}")
        self.send(f"setoption name Backend value {backend}")
        self.sync()
        return self

    def bestmoves(self) -> list[str]:
        return [line for line in self.seen if line.startswith("bestmove")]

    def errors(self) -> list[str]:
        return [line for line in self.seen if line.startswith("info string error")]

    def stderr_text(self) -> str:
        return b"".join(self.stderr).decode("utf-8", errors="replace")

    def wait_exit(self, timeout) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"engine still running {timeout} s later; last lines {self.seen[-8:]}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._stop_reading.set()
        self._stdout_thread.join(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass
