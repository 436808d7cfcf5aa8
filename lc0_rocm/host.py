"""The host this process runs on, as every layer sees it (a bottom module,
like sizes.py): the cores it may use."""
from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its affinity (a container's or
    taskset's share), not the host's count where the two differ."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):        # no affinity call (macOS, Windows)
        return os.cpu_count() or 1
