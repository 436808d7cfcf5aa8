"""Set-up work on a daemon thread beside the reading and planning of the
input: the network's load and the net's hash. Daemon: a run stopped
meanwhile (Ctrl-C while the input is read, or during a GPU library's first
build) ends at once instead of waiting for it."""
from __future__ import annotations

import concurrent.futures
import threading
from typing import Callable


def in_background(fn, *args) -> concurrent.futures.Future:
    """fn(*args) on a daemon thread; its result or exception in the future."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def work():
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn(*args))
        except BaseException as e:
            future.set_exception(e)
    threading.Thread(target=work, name="lc0-rocm-prepare", daemon=True).start()
    return future


def close_when_done(future: concurrent.futures.Future, close: Callable) -> None:
    """close(result) once `future` has a result (now, or when it comes for
    a run that ended before it); nothing if it failed; never waits."""
    def done(f):
        if f.exception() is None:
            close(f.result())
    future.add_done_callback(done)
