"""Bounds of a search's limits, shared by every way in (Engine.search, the
UCI engine, `analyse`, `suite`, `bench`): the native core's types and the
longest time a caller is taken to mean."""
from __future__ import annotations

import math

from lc0_rocm.errors import InvalidArgumentError

MAX_NODES = 2**63 - 1          # the native core's node limits are 64-bit
MAX_INT32 = 2**31 - 1          # depth and mate reach the search as C ints
# A movetime or time budget above this many seconds is taken for a value
# meant in milliseconds and refused (UCI's times come in milliseconds and
# are converted, so its engine lifts the bound).
MOVETIME_LIMIT_S = 1000.0


def check_nodes(value, name: str = "nodes") -> None:
    """InvalidArgumentError (a ValueError) unless `value` is None or 1..MAX_NODES."""
    if value is not None and not 1 <= value <= MAX_NODES:
        raise InvalidArgumentError(f"{name} must be 1..{MAX_NODES}, got {value}")


def check_seconds(value, name: str = "movetime", limit: float | None = MOVETIME_LIMIT_S,
                  allow_zero: bool = False, longer: str = "") -> None:
    """InvalidArgumentError unless `value` is None or a finite number of seconds above
    0 (or 0 itself with allow_zero) and at most `limit` (None: no bound);
    `longer` tells the caller how to ask for more than `limit`."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise InvalidArgumentError(f"{name} must be a finite number of seconds {'>= 0' if allow_zero else '> 0'}, "
                                   f"got {value}")
    if limit is not None and value > limit:
        raise InvalidArgumentError(f"{name}={value:g} is {value / 60:.0f} minutes: times are in seconds "
                                   f"({name}=1.5 is 1.5 s), at most {limit:g}{'; ' + longer if longer else ''}")
