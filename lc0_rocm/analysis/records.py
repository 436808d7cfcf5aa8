"""What analysis says about one position: `AnalysisRecord`, and the rules
that turn two consecutive positions' values into a played move's loss and
its lichess-style mark.

Values are from the side to move in the analysed position unless a field
says otherwise: `wdl` is (win, draw, loss) probabilities, `q` = win - loss
in [-1, 1], `score_cp` centipawns as lc0's `info ... score cp` reports them
(ScoreType WDL_mu), `mate` moves to mate (> 0: the side to move mates),
`moves_left` plies, `played_loss` expected score (win + draw / 2) in [0, 1].
"""
from __future__ import annotations

import dataclasses
from typing import Any

# lichess's judgement thresholds (lila Advice.scala): a drop of winning
# chances (-1..1) by 0.1 / 0.2 / 0.3, i.e. of expected score by half that.
MARKS = ((0.15, "??"), (0.10, "?"), (0.05, "?!"))



@dataclasses.dataclass
class AnalysisRecord:
    """One analysed position (one line of the JSONL output).

    source, line: the input file and the 1-based line the position comes
      from (a PGN game's first line); game: 1-based game number in a PGN
      file (None otherwise); ply: half-moves played in the game before this
      position (0 for EPD and FEN lines); fen: the position.
    id: an EPD line's `id` operation (None otherwise).
    mode: "eval" (the network once) or "search".
    wdl, q, score_cp, mate, moves_left: the value (see the module's units);
      for "search" that of the best move, for "eval" the network's.
    best: the best move in UCI (the search's, or the policy's top move);
      pv: the principal variation, UCI moves (["best"] for "eval").
    policy: [(UCI move, probability)] of the policy's top moves, most
      probable first ("eval" only; [] for "search").
    nodes: visits the search made (0 for "eval"); with `nodes`, at most that many (StrictNodes).
    outcome: "checkmate" or "stalemate" when the side to move has no legal
      move (then best is None and the value is exact), else None.
    played: the move the game played from here (UCI, PGN only);
      played_loss: the expected score it gave away, from this position's
      value and the next one's (None when the next position was not
      analysed); mark: "?!", "?" or "??" by lichess's thresholds (0.05,
      0.10, 0.15 of expected score), None below them or when the played
      move is the best move.
    """

    source: str
    line: int
    game: int | None
    ply: int
    fen: str
    mode: str
    wdl: tuple[float, float, float]
    q: float
    score_cp: int | None
    mate: int | None
    moves_left: float | None
    best: str | None
    pv: list[str]
    policy: list[tuple[str, float]]
    nodes: int
    outcome: str | None = None
    id: str | None = None
    played: str | None = None
    played_loss: float | None = None
    mark: str | None = None

    @property
    def expected_score(self) -> float:
        """win + draw / 2 for the side to move."""
        return self.wdl[0] + self.wdl[1] / 2

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values (tuples become lists)."""
        # Field by field: dataclasses.asdict deep-copies every value (~0.14 ms a
        # record, a quarter of a 2,000-position run's time outside its searches).
        out = {f.name: getattr(self, f.name) for f in _FIELDS}
        out["wdl"] = list(self.wdl)
        out["pv"] = list(self.pv)
        out["policy"] = [list(p) for p in self.policy]
        return out



_FIELDS = dataclasses.fields(AnalysisRecord)


def played_loss(before: AnalysisRecord, after: AnalysisRecord | None) -> float | None:
    """Expected score the move from `before` to `after` gave away (>= 0);
    None when `after` was not analysed or either failed."""
    if after is None:
        return None
    return loss_between(before.expected_score, after.expected_score)


def loss_between(before: float, after: float) -> float:
    """The loss of a move from a position of expected score `before` (its
    mover's) to one of `after` (the opponent's)."""
    return max(0.0, round(before - (1.0 - after), 6))


def mark_of(loss: float | None, played: str | None = None, best: str | None = None) -> str | None:
    """lichess's mark for a loss; none for the best move itself (a loss
    measured from two searches' values is then search noise)."""
    if loss is None or (played is not None and played == best):
        return None
    for threshold, mark in MARKS:
        if loss >= threshold:
            return mark
    return None

