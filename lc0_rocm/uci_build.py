"""The first start of the UCI engine: the native libraries (the chess core,
and the GPU library when the Backend needs it) are built on a thread of
their own from `uci` on; `isready` (and a `go` that comes first) waits for
that build and says what it does in `info string` lines, at least every
5 s (file n of N, seconds so far), so that a GUI and its user see it
working. `readyok` follows once the build is over; a search never starts
a build of its own."""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable

from lc0_rocm import buildcache

GPU_PREFIXES = ("rocm", "cuda")
REPORT_EVERY_S = 5.0


def gpu_vendor(backend: str, options: dict) -> str | None:
    """The GPU toolchain (`rocm`/`cuda` prefix) a Backend and its options
    will need, or None; `auto` counts when a GPU backend is usable."""
    names = [backend] + _child_backends(options)
    for name in names:
        if name == "auto":
            try:
                from lc0_rocm import backends
                name = backends.resolve("auto")
            except Exception:   # noqa: BLE001 - the search reports it when it loads
                continue
        if name.startswith(GPU_PREFIXES):
            return name.split("-")[0]
    return None


def _child_backends(options) -> list[str]:
    """`backend` values anywhere in a BackendOptions tree (wrappers' children)."""
    found = []
    if isinstance(options, dict):
        for key, value in options.items():
            if key == "backend" and isinstance(value, str):
                found.append(value)
            elif isinstance(value, dict):
                found += _child_backends(value)
    return found


class NativeBuild:
    """The build started at `uci`; `wait(say)` blocks until it is over,
    passing progress lines to `say` meanwhile."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._lines: queue.Queue = queue.Queue()
        self._key: tuple | None = None

    def start(self, backend: str, options: dict) -> None:
        """Build what `backend` needs (once per Backend choice), in the background."""
        key = (backend, repr(options))
        if self._key == key or (self._thread is not None and self._thread.is_alive()):
            return
        self._key = key
        self._thread = threading.Thread(target=self._build, args=(backend, options),
                                        name="lc0-rocm-build", daemon=True)
        self._thread.start()

    def _build(self, backend: str, options: dict) -> None:
        def report(progress: buildcache.BuildProgress) -> None:
            self._lines.put(progress.line())

        try:
            from lc0_rocm import native_core
            try:
                native_core.build(on_progress=report)
            except native_core.NativeCoreError:
                pass   # no compiler or a failed build: said when the core is loaded
            vendor = gpu_vendor(backend, options)
            if vendor is not None:
                from lc0_rocm.backends import native
                native.build(native.split_name(vendor)[0], on_progress=report)
        except Exception:   # noqa: BLE001 - the net's loading reports the same error
            pass

    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, say: Callable[[str], None]) -> None:
        """Until the build is over; each progress line goes to `say`, and
        one at least every REPORT_EVERY_S even when the build is quiet."""
        thread = self._thread
        if thread is None:
            return
        last, said_any = None, False
        next_report = time.monotonic() + REPORT_EVERY_S
        while thread.is_alive() or not self._lines.empty():
            try:
                last = self._lines.get(timeout=0.05)
            except queue.Empty:
                if not thread.is_alive() or time.monotonic() < next_report:
                    continue
                line = last or "building the native libraries (first start only)"
            else:
                line = last
            say(line)
            said_any = True
            next_report = time.monotonic() + REPORT_EVERY_S
        thread.join()
        if said_any:
            say("native libraries built")
