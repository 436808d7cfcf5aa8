"""The root of every error lc0-rocm raises on purpose.

    try:
        ...
    except lc0_rocm.Lc0RocmError as e:   # a bad net, backend, option, position ...
        print(e)

Each error keeps the built-in base it had (ValueError, OSError, ...), so
code that catches those still does.
"""
from __future__ import annotations


class Lc0RocmError(Exception):
    """Any error of lc0-rocm's own (bad input, a missing net or GPU, a
    failed native call); the message says what and, where it can, how to
    fix it."""


class InvalidArgumentError(Lc0RocmError, ValueError):
    """A value the caller passed that lc0-rocm refuses: a search limit, an
    option, a position, an analysis setting."""


class ClosedError(Lc0RocmError, RuntimeError):
    """A network used after close()."""
