"""Time manager for UCI clocks: lc0 v0.32.1's default "legacy" manager.

Given the clock of the side to move (wtime/btime, winc/binc, movestogo) it
budgets this move's time. Facts taken from lc0's
src/search/classic/stoppers/legacy.cc:

- expected moves to go at game ply p (log-logistic median residual life):
  m = midpoint * (1 + 2 * (p/2 / midpoint)^steepness)^(1/steepness) - p/2,
  midpoint 51.5, steepness 7.0; `movestogo` wins when it is smaller;
- total = time + inc * (movestogo - 1) - MoveOverheadMs, spread evenly;
- the first move of a game gets (1 + 1.8 + 0.25 * min(12, ply)) times more;
- time left unused by the previous search (the "piggy bank") is spent now;
- the budget never exceeds time - MoveOverheadMs.

On top of lc0 (which can hand out a zero or negative deadline on a nearly
empty clock) the budget here is a hard deadline that leaves MoveOverheadMs
of the clock untouched; when even that is gone the search is cut to a
single node so that a move is sent at once.

Also on top of lc0: what a move costs beyond the search (the pipes, the GUI,
reading the command) is measured from the clocks the GUI sends: the clock
drop over our last move less the time our search used. That `cycle_lag_ms`
is kept back for every move still expected (and from this move's hard
deadline), so that a long game does not reach its last moves with a clock
that only the lag eats (sudden death on a loaded machine). Until a lag is
seen the budgets are lc0's.
"""
from __future__ import annotations

import copy
import dataclasses

from lc0_rocm.errors import InvalidArgumentError

# lc0 legacy defaults
MIDPOINT_MOVE = 51.5
STEEPNESS = 7.0
IMMEDIATE_USE = 1.0
FIRST_MOVE_BONUS = 1.8
BOOK_PLY_BONUS = 0.25
SMART_PRUNING_TOLERANCE_MS = 200
DEFAULT_MOVE_OVERHEAD_MS = 200
LAG_SMOOTHING = 0.3      # weight of the newest lag in its running mean
MAX_LAG_MS = 1000.0      # a larger clock drop is not lag (the GUI changed the clock)


def estimated_moves_to_go(ply: int, midpoint: float = MIDPOINT_MOVE,
                          steepness: float = STEEPNESS) -> float:
    """Median number of moves still to play at game ply `ply`."""
    move = ply / 2.0
    return midpoint * (1 + 2 * (move / midpoint) ** steepness) ** (1 / steepness) - move


@dataclasses.dataclass
class ClockParams:
    """The clock part of a UCI `go`, all in milliseconds."""
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None


@dataclasses.dataclass
class Budget:
    """deadline_ms: hard limit for this move, counted from the clock start.
    single_node: the clock is (nearly) gone; search one node and move."""
    deadline_ms: float
    single_node: bool = False


class LegacyTimeManager:
    """lc0's legacy time manager. One instance lives for one game."""

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS,
                 slowmover: float = 1.0):
        if move_overhead_ms < 0:
            raise InvalidArgumentError("MoveOverheadMs must be >= 0")
        if not 0.0 <= slowmover <= 100.0:
            raise InvalidArgumentError("Slowmover must be within 0..100")
        self.move_overhead_ms = int(move_overhead_ms)
        self.slowmover = float(slowmover)
        self.first_move_of_game = True
        self.time_spared_ms = 0.0
        self._last_deadline_ms: float | None = None
        self.cycle_lag_ms = 0.0
        self._clock_seen: tuple[float, float] | None = None   # (our clock, increment) at the last budget
        self._last_used_ms: float | None = None

    def _observe(self, time: float, increment: float) -> None:
        """Update cycle_lag_ms from the clock of this move and the last one."""
        if self._clock_seen is not None and self._last_used_ms is not None:
            before, inc_before = self._clock_seen
            lag = (before + inc_before - time) - self._last_used_ms
            if 0.0 <= lag <= MAX_LAG_MS:
                self.cycle_lag_ms = lag if self.cycle_lag_ms == 0.0 else (
                    (1 - LAG_SMOOTHING) * self.cycle_lag_ms + LAG_SMOOTHING * lag)
        self._clock_seen, self._last_used_ms = (float(time), float(increment)), None

    def budget(self, clock: ClockParams, *, black_to_move: bool, ply: int) -> Budget | None:
        """The budget for this move, or None when the clock sets no limit."""
        time = clock.btime if black_to_move else clock.wtime
        if time is None:
            return None
        inc = clock.binc if black_to_move else clock.winc
        increment = max(0, inc or 0)
        self._observe(time, increment)
        lag = self.cycle_lag_ms

        movestogo = estimated_moves_to_go(ply)
        if clock.movestogo is not None and 0 < clock.movestogo < movestogo:
            movestogo = float(clock.movestogo)

        total = max(0.0, time + increment * (movestogo - 1) - self.move_overhead_ms - lag * movestogo)

        to_squander = 0.0
        if self.time_spared_ms > 0:
            total = max(0.0, total - self.time_spared_ms)
            to_squander = float(int(self.time_spared_ms * IMMEDIATE_USE))
            self.time_spared_ms -= to_squander

        this_move = total / movestogo
        if self.first_move_of_game:
            this_move *= 1.0 + FIRST_MOVE_BONUS + BOOK_PLY_BONUS * min(12, ply)
            self.first_move_of_game = False

        if self.slowmover < 1.0 or this_move * self.slowmover > SMART_PRUNING_TOLERANCE_MS:
            self.time_spared_ms -= this_move * (self.slowmover - 1)
            this_move *= self.slowmover

        this_move += to_squander
        hard_cap = time - self.move_overhead_ms - lag
        deadline = min(float(int(this_move)), float(hard_cap))
        self._last_deadline_ms = deadline
        if deadline <= 0:
            return Budget(deadline_ms=0.0, single_node=True)
        return Budget(deadline_ms=deadline)

    def preview(self, clock: ClockParams, *, black_to_move: bool, ply: int) -> Budget | None:
        """What budget() would give, without spending the first-move bonus
        or the piggy bank (for a `go ponder`: the move a ponderhit will get)."""
        return copy.copy(self).budget(clock, black_to_move=black_to_move, ply=ply)

    def search_done(self, used_ms: float) -> None:
        """Bank the part of the last budget that the search left unused."""
        self._last_used_ms = used_ms
        if self._last_deadline_ms is not None:
            self.time_spared_ms += self._last_deadline_ms - used_ms
            self._last_deadline_ms = None
