"""What a search returns (lc0_rocm.Engine.search): the result, its `info`
lines and per-move figures, all from the side to move at the root."""
from __future__ import annotations

import dataclasses

import chess

__all__ = ["SearchInfo", "SearchResult", "MoveStats"]


@dataclasses.dataclass
class SearchInfo:
    """One `info` line (one per MultiPV line), lc0's fields, from the side
    to move at the root: `wdl` (win, draw, loss) probabilities like
    Evaluation.wdl and SearchResult.wdl, `wdl_permille` the integers lc0
    prints (adding up to 1000), q = win - loss, `score_cp` or `mate` (moves,
    negative when mated), `time_ms`, `nps`, `pv` (the line's moves)."""
    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int
    multipv: int                 # 1-based
    move: chess.Move | None
    pv: list[chess.Move]
    q: float                     # side to move at the root
    wdl: tuple[float, float, float]   # probabilities, side to move
    moves_left: int | None
    tbhits: int
    score_cp: int | None         # None when `mate` is set
    mate: int | None
    wdl_permille: tuple[int, int, int] | None = None   # as the `info` line prints it


@dataclasses.dataclass
class MoveStats:
    """The search's figures for one root move (SearchResult.stats), from the
    root's side to move: `visits` (nodes below the move), `q` (win - loss,
    draw score included), `p` (prior after policy temperature), `wdl` (win,
    draw, loss probabilities), `moves_left` (expected plies, None without
    that head), `n_in_flight` (visits still at the network)."""
    visits: int
    q: float                     # root side to move's view
    p: float                     # prior (after policy temperature)
    wdl: tuple[float, float, float]
    moves_left: float | None
    n_in_flight: int = 0


@dataclasses.dataclass
class SearchResult:
    """What Engine.search found, from the side to move at the root.

    best_move / ponder_move: the move to play and the expected reply (None
    when there is no legal move); pv: the principal variation; wdl: (win,
    draw, loss) probabilities and q = win - loss of the best move; nodes:
    visits searched; nps: nodes per second; time: seconds the search took;
    depth / seldepth: lc0's average and maximum depth; moves_left: expected
    remaining plies (None without that head); lines: one SearchInfo per
    MultiPV line, best first; stats: per root move visit counts, priors and
    values (MoveStats); nn_evals: network evaluations this search made."""

    best_move: chess.Move | None
    ponder_move: chess.Move | None
    pv: list[chess.Move]
    wdl: tuple[float, float, float]
    q: float
    nodes: int
    nps: int
    time: float                  # seconds
    depth: int
    seldepth: int
    moves_left: float | None
    lines: list[SearchInfo]
    stats: dict[chess.Move, MoveStats]
    nn_evals: int = 0


def wdl_probabilities(wl: float, d: float) -> tuple[float, float, float]:
    """(win, draw, loss) from win - loss and draw."""
    return ((1.0 + wl - d) / 2.0, d, (1.0 - wl - d) / 2.0)
