"""The UCI engine's input: `go` arguments and `position` lines parsed, with
the rules a position must meet before it is searched (lc0 v0.32.1's
uciloop.cc for the syntax; the native core's FEN limits for the counters).
Errors are UciError, which the engine reports and survives."""
from __future__ import annotations

import dataclasses
import re

import chess

from lc0_rocm.errors import Lc0RocmError
from lc0_rocm.limits import MAX_INT32, MAX_NODES

MAX_ECHO = 200  # longest piece of a bad input line echoed back in an error
MAX_HALFMOVE_CLOCK = 2**31 - 1  # the native core's FEN limits (native/core/src/fen.cpp)
MAX_FULLMOVE_NUMBER = 1_000_000_000


class UciError(Lc0RocmError):
    """A command that cannot be carried out; reported, then ignored."""


# ------------------------------------------------------------------ parsing

GO_NUMERIC = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "mate", "nodes", "movetime")
GO_FLAGS = ("infinite", "ponder")
GO_KEYWORDS = GO_NUMERIC + GO_FLAGS + ("searchmoves",)


@dataclasses.dataclass
class GoParams:
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    mate: int | None = None
    nodes: int | None = None
    movetime: int | None = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = dataclasses.field(default_factory=list)
    ignored: list[str] = dataclasses.field(default_factory=list)

    def has_clock(self) -> bool:
        return self.wtime is not None or self.btime is not None


def parse_go(tokens: list[str]) -> GoParams:
    """The arguments of `go`. Tokens after `searchmoves` are moves until the
    next keyword; unknown tokens are collected in .ignored (UCI says to
    skip them); a bad number is an error."""
    params = GoParams()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token in GO_FLAGS:
            setattr(params, token, True)
            i += 1
        elif token in GO_NUMERIC:
            if i + 1 >= len(tokens) or tokens[i + 1] in GO_KEYWORDS:
                raise UciError(f"go: expected a number after {token}")
            setattr(params, token, _parse_int(token, tokens[i + 1]))
            i += 2
            if token == "mate" and params.mate < 1:
                raise UciError(f"go: mate needs a number of moves >= 1, got {params.mate}")
        elif token == "searchmoves":
            i += 1
            while i < len(tokens) and tokens[i] not in GO_KEYWORDS:
                params.searchmoves.append(tokens[i])
                i += 1
        else:
            params.ignored.append(token)
            i += 1
    return params


def _parse_int(key: str, text: str) -> int:
    # ASCII digits only: int() would also take "1_000" or non-Latin digits
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise UciError(f"go: invalid value {echo(text)} for {key}")
    value = int(text)
    if abs(value) > MAX_NODES:
        raise UciError(f"go: out of range value {echo(text)} for {key}")
    return value


def split_position(tokens: list[str]) -> tuple[list[str], list[str]]:
    """`startpos|fen FEN [moves M...]` -> (head tokens, move tokens)."""
    if not tokens or tokens[0] not in ("startpos", "fen"):
        raise UciError("position requires either fen or startpos")
    if "moves" in tokens:
        split = tokens.index("moves")
        return tokens[:split], tokens[split + 1:]
    return tokens, []


def start_board(head: list[str], chess960: bool = False) -> chess.Board:
    """The board a `position` head (`startpos` or `fen FEN`) names."""
    if head[0] == "startpos":
        if len(head) > 1:
            raise UciError(f"position: unexpected token {echo(head[1])} after startpos")
        return chess.Board(chess960=chess960)
    fen = " ".join(head[1:])
    if not fen:
        raise UciError("position fen: missing FEN")
    return board_from_fen(fen, chess960)


def push_moves(board: chess.Board, moves: list[str], first_ply: int = 0) -> str | None:
    """Play `moves` on `board`; on an illegal one stop before it and say why."""
    for ply, text in enumerate(moves, start=first_ply):
        try:
            move = board.parse_uci(text)
        except ValueError:
            return (f"illegal move {echo(text)} at ply {ply + 1} of position; "
                    f"position set to the one before it ({board.fen()})")
        board.push(move)
    return None


def parse_position(tokens: list[str], chess960: bool = False) -> tuple[chess.Board, str | None]:
    """`position startpos|fen FEN [moves M...]` -> (board, error). On a bad
    move the board holds the moves before it and error says why; a bad FEN
    raises UciError."""
    head, moves = split_position(tokens)
    board = start_board(head, chess960)
    return board, push_moves(board, moves)


# Positions the search accepts although python-chess flags them (they occur
# in real games from odd FENs and do no harm to move generation).
_TOLERATED_STATUS = chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK


def board_from_fen(fen: str, chess960: bool = False) -> chess.Board:
    """A board for `fen`; UciError when the FEN is malformed or the position
    cannot be played (no king, a pawn on the back rank, side not to move in
    check, ...). Castling rights without their king and rook, and an
    impossible en-passant square, are dropped."""
    try:
        board = chess.Board(fen, chess960=chess960)
    except ValueError as e:
        raise UciError(f"malformed FEN {echo(fen)}: {e}") from None
    if not 0 <= board.halfmove_clock <= MAX_HALFMOVE_CLOCK:
        raise UciError(f"invalid position {echo(fen)}: half-move clock above {MAX_HALFMOVE_CLOCK}")
    if board.fullmove_number > MAX_FULLMOVE_NUMBER:
        raise UciError(f"invalid position {echo(fen)}: fullmove number above {MAX_FULLMOVE_NUMBER}")
    if board.status() & chess.STATUS_BAD_CASTLING_RIGHTS:
        board.castling_rights = board.clean_castling_rights()
    if board.status() & chess.STATUS_INVALID_EP_SQUARE:
        board.ep_square = None
    bad = board.status() & ~_TOLERATED_STATUS
    if bad:
        problems = [name[len("STATUS_"):].lower().replace("_", " ")
                    for name in dir(chess) if name.startswith("STATUS_")
                    and getattr(chess, name) & bad]
        raise UciError(f"invalid position {echo(fen)}: {', '.join(sorted(problems))}")
    return board


def echo(text: str) -> str:
    """A piece of input, safe to print on one line."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= MAX_ECHO else text[:MAX_ECHO] + "..."


def continues_game(old: chess.Board | None, board: chess.Board) -> bool:
    """True when `board` is the `old` position plus some moves."""
    if old is None or old.root().fen() != board.root().fen():
        return False
    n = len(old.move_stack)
    return board.move_stack[:n] == old.move_stack


# Plies a `position` may take back from the last one and still count as the
# same game, played on from the last board: a missed ponder move takes back
# the predicted reply and plays the real one. A shorter position, or more
# taken back, is parsed whole and starts the clock's state anew.
MAX_TAKEBACK = 1


def shared_moves(old_key: tuple | None, key: tuple) -> int | None:
    """The number of leading moves the `position` `key` (chess960, head,
    moves) shares with `old_key`, or None when they start elsewhere."""
    if old_key is None or old_key[:2] != key[:2]:
        return None
    old, new = old_key[2], key[2]
    shared, limit = 0, min(len(old), len(new))
    while shared < limit and old[shared] == new[shared]:
        shared += 1
    return shared


def play_position(args: list[str], chess960: bool, previous: chess.Board | None,
                  previous_key: tuple | None) -> tuple[chess.Board, tuple, bool]:
    """`position ...` -> (board, key, the same game as before?). The same
    game gone on (or its last ply replaced: a missed ponder move) plays
    only the difference on the previous board, so that a move costs the
    same at ply 200 as at ply 2; that board is changed in place (no search
    may hold it). UciError for a bad FEN or move."""
    head, moves = split_position(args)
    key = (chess960, head, moves)
    shared = shared_moves(previous_key, key) if previous is not None else None
    if (shared is not None and len(previous_key[2]) - shared <= MAX_TAKEBACK
            and len(moves) >= len(previous_key[2])):
        board, continues = previous, True
        for _ in range(len(previous_key[2]) - shared):
            board.pop()
        problem = push_moves(board, moves[shared:], shared)
    else:
        board = start_board(head, chess960)
        problem = push_moves(board, moves)
        continues = continues_game(previous, board)
    if problem:
        raise UciError(problem.split(";")[0])
    return board, key, continues


def parse_setoption(line: str) -> tuple[str, str]:
    """`setoption name N [value V]` -> (N, V). As lc0: the name is
    everything between `name` and `value`, kept as is."""
    text = line.split("setoption", 1)[1].strip()
    if not text.startswith("name") or not text[4:5].isspace():
        raise UciError("setoption must be followed by name")
    text = text[4:].strip()
    name, value = text, ""
    if "value" in text.split():
        idx = _find_word(text, "value")
        name, value = text[:idx].strip(), text[idx + len("value"):].strip()
    if not name:
        raise UciError("setoption requires name")
    return name, value


def _find_word(text: str, word: str) -> int:
    """Index of the first whitespace-separated `word` in `text`."""
    pos = 0
    for token in text.split():
        pos = text.index(token, pos)
        if token == word:
            return pos
        pos += len(token)
    return -1

