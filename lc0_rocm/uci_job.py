"""One `go` being answered: the search job the UCI engine runs on a worker
thread, which owes the GUI exactly one bestmove."""
from __future__ import annotations

import dataclasses
import threading

import chess

from lc0_rocm.uci_parse import GoParams


@dataclasses.dataclass
class SearchJob:
    """A `go` on its worker thread, which sends its bestmove once the search
    ends and, for infinite/ponder, once released."""
    board: chess.Board
    go: GoParams
    stop: threading.Event
    release: threading.Event      # set when bestmove may be sent (infinite/ponder)
    hold: bool                    # infinite or ponder: wait for stop/ponderhit
    clock_start: float
    unbounded: bool = False       # no limit at all: runs until `stop`
    search_does_depth: bool = False  # the search stops at `go depth` itself
    extra_tbhits: int = 0
    silent: bool = False          # ponderhit: the search that replaces it answers the `go`
    stop_requested: bool = False  # `stop` seen
    ponder_hit: bool = False      # ponderhit turned this ponder search into the move's search
    timer: threading.Timer | None = None   # stops it when the move's budget is spent
    thread: threading.Thread | None = None

    def halt(self) -> None:
        """Stop the search and let its bestmove go."""
        self.stop.set()
        self.release.set()

    def reached_goal(self, info) -> bool:
        """`go depth` or `go mate` met by this info line, where the search
        does not stop there itself."""
        go = self.go
        if (go.depth is not None and not self.search_does_depth and (info.depth or 0) >= go.depth
                and getattr(info, "multipv", 1) in (None, 1)):
            return True
        mate = getattr(info, "mate", None)
        return go.mate is not None and mate is not None and 0 < mate <= go.mate


def bestmove_line(board: chess.Board, result) -> tuple[str, str | None]:
    """(the `bestmove` line for a search result, an error to report or None)."""
    best = getattr(result, "best_move", None) if result is not None else None
    if best is None or best not in board.legal_moves:
        # no made-up move: the error says why
        return "bestmove (none)", None if best is None else f"search returned an illegal move {best.uci()}"
    line = f"bestmove {best.uci()}"
    ponder = getattr(result, "ponder_move", None)
    if ponder is not None:
        after = board.copy(stack=False)
        after.push(best)
        if ponder in after.legal_moves:
            line += f" ponder {ponder.uci()}"
    return line, None
