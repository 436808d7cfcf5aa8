"""What a `go` asks of the search, by lc0's rules: the search's keyword
arguments from the go's limits, the clock (through the time manager) and
the time already spent since `position` arrived.

lc0: `go infinite` and `go ponder` ignore every limit; `go mate` ignores
movetime only; a move with no time left searches a single node.
"""
from __future__ import annotations

import inspect

import chess

from lc0_rocm.limits import MAX_INT32
from lc0_rocm.timemanager import ClockParams, LegacyTimeManager
from lc0_rocm.uci_parse import GoParams, UciError


def clock_params(go: GoParams) -> ClockParams:
    return ClockParams(go.wtime, go.btime, go.winc, go.binc, go.movestogo)


def searchmoves(board: chess.Board, texts: list[str]) -> list[chess.Move]:
    """`go searchmoves`: the legal ones (lc0 skips the others); UciError
    when none is legal."""
    moves = []
    for text in texts:
        try:
            moves.append(board.parse_uci(text))
        except ValueError:
            continue
    if not moves:
        raise UciError("No legal searchmoves.")
    return moves


def search_limits(go: GoParams, board: chess.Board, tm: LegacyTimeManager, *, elapsed_ms: float,
                  move_overhead_ms: int, accepts_depth: bool) -> dict:
    """Keyword arguments for Engine.search: movetime/time_budget (seconds
    left), nodes, infinite, depth."""
    kwargs: dict = {}
    hold = go.infinite or go.ponder
    black = board.turn == chess.BLACK
    budgets = []
    if go.movetime is not None and not (hold or go.mate is not None):
        budgets.append(go.movetime - move_overhead_ms)
    single_node = False
    if not hold and go.has_clock():
        budget = tm.budget(clock_params(go), black_to_move=black, ply=board.ply())
        if budget is not None:
            budgets.append(budget.deadline_ms)
            single_node = budget.single_node
    ponder_single_node = False
    if go.ponder and go.has_clock() and go.nodes is None and go.depth is None:
        # With (nearly) no time left, the move after a ponderhit will be
        # this search's: one node, then wait for ponderhit or stop, with
        # no batch in flight for the next search to wait for.
        preview = tm.preview(clock_params(go), black_to_move=black, ply=board.ply())
        ponder_single_node = preview is not None and preview.single_node
    if budgets:
        remaining_ms = min(budgets) - elapsed_ms
        if remaining_ms <= 0:
            single_node = True
        kwargs["movetime"] = max(remaining_ms, 0.0) / 1000.0
        kwargs["time_budget"] = kwargs["movetime"]
    if go.nodes is not None:
        kwargs["nodes"] = max(1, go.nodes)
    if single_node or ponder_single_node:
        kwargs["nodes"] = 1
    if (hold and not ponder_single_node) or not (budgets or "nodes" in kwargs):
        kwargs["infinite"] = True  # plain `go`, infinite, ponder, mate, depth: until stopped
    if go.depth is not None and accepts_depth:
        kwargs["depth"] = min(max(1, go.depth), MAX_INT32)
    return kwargs


def ponderhit_budget_ms(go: GoParams, board: chess.Board, tm: LegacyTimeManager,
                        move_overhead_ms: int) -> float | None:
    """After `ponderhit`, the milliseconds the move's search may take from
    now (`go` without `ponder`); None when no time limits it (nodes, depth,
    mate or no clock): then the search restarts with those limits."""
    if go.nodes is not None or go.depth is not None or go.mate is not None:
        return None
    budgets = []
    if go.movetime is not None:
        budgets.append(go.movetime - move_overhead_ms)
    if go.has_clock():
        budget = tm.budget(clock_params(go), black_to_move=board.turn == chess.BLACK, ply=board.ply())
        if budget is not None:
            budgets.append(0.0 if budget.single_node else budget.deadline_ms)
    return min(budgets) if budgets else None


def accepts_keyword(func, name: str) -> bool:
    """Does `func` take the keyword `name` (an engine's search may not)?"""
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
