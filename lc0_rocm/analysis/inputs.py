"""Analysis input: PGN games, EPD lines and FEN lists -> positions to analyse.

Each position comes with where it came from (file, line, game, ply) and a
*row*, "FEN" or "FEN moves m1 m2 ...": the position as the engine must see
it. For a game position the row starts at the zeroing move before the
eighth newest position (what lc0's history planes and repetition rules
look at), so equal rows are equal positions for the network and the
search, and a row does not grow with the game.

A malformed game, EPD or FEN line becomes an `InputError` with its file
and line and the reading goes on. The kind of a file is told by its name
(`.pgn`, `.epd`, anything else FEN lines; `.gz` is read through gzip) or
by `kind`. PGN: the mainline only (variations are not analysed).
"""
from __future__ import annotations

import gzip
import io
import os
import re
from typing import Iterable, Iterator, NamedTuple

import chess
import chess.pgn

from lc0_rocm.errors import InvalidArgumentError

HISTORY = 8          # positions lc0's input planes look at
KINDS = ("pgn", "epd", "fen")


class Position(NamedTuple):
    source: str
    line: int
    game: int | None
    ply: int
    fen: str
    row: str
    played: str | None = None    # the game's next move (UCI), PGN only
    id: str | None = None        # EPD `id`


class InputError(NamedTuple):
    source: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"


class Selection(NamedTuple):
    """Which positions of a game: every `every`-th ply from the start;
    `played`: only those from which the game played a move (not the last)."""
    every: int = 1
    played: bool = False

    def wants(self, ply: int, final: bool) -> bool:
        return ply % self.every == 0 and not (self.played and final)


def kind_of(path: str) -> str:
    name = path.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".pgn"):
        return "pgn"
    if name.endswith(".epd"):
        return "epd"
    return "fen"


def check_input_files(names: list[str]) -> None:
    """AnalysisError naming the inputs that are folders, are not there or
    are not regular files (a device, a pipe), in that order."""
    from lc0_rocm.analysis.settings import AnalysisError
    for test, what in ((os.path.isdir, "an input is a folder, not a file"),
                       (lambda n: not os.path.exists(n), "no such input file"),
                       (lambda n: not os.path.isfile(n), "an input is not a regular file")):
        bad = [n for n in names if test(n)]
        if bad:
            raise AnalysisError(f"{what}: {', '.join(bad)}")


def open_text(path: str):
    """The file as text (UTF-8, bad bytes replaced: a stray byte in a
    comment must not stop the run; a byte-order mark, as Windows editors
    write, dropped), through gzip for `.gz`."""
    if path.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", errors="replace")
    return open(path, encoding="utf-8-sig", errors="replace", newline=None)


def read_positions(paths: Iterable[str], kind: str | None = None,
                   selection: Selection = Selection()) -> Iterator[Position | InputError]:
    """Every position of every file in order, or an InputError where one
    cannot be read (also a file that cannot be opened)."""
    for path in paths:
        path = os.fspath(path)
        this_kind = kind or kind_of(path)
        if this_kind not in KINDS:
            raise InvalidArgumentError(f"input kind must be one of {', '.join(KINDS)}, got {this_kind!r}")
        try:
            handle = open_text(path)
        except OSError as e:
            yield InputError(path, 0, f"cannot read: {e.strerror or e}")
            continue
        with handle:
            try:
                if this_kind == "pgn":
                    yield from _pgn_positions(path, handle, selection)
                else:
                    yield from _line_positions(path, handle, this_kind == "epd")
            except (OSError, EOFError, UnicodeError) as e:   # a truncated .gz, a read error
                yield InputError(path, 0, f"reading stopped: {e}")


# ---------------------------------------------------------------- EPD / FEN
_ID = re.compile(r'(?:^|;)\s*id\s+"([^"]*)"')
_HMVC = re.compile(r'(?:^|;)\s*hmvc\s+(\d+)')
_FMVN = re.compile(r'(?:^|;)\s*fmvn\s+(\d+)')


def _line_positions(path: str, handle, epd: bool) -> Iterator[Position | InputError]:
    """A position per line. The FEN itself is judged by the engine when it
    computes the row (a refused one is reported then, with this line), so
    reading costs no parsing per line; a row with moves is replayed here,
    for its FEN after them."""
    for number, text in enumerate(handle, start=1):
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        if "\0" in text:      # rows travel NUL-separated to the core
            yield InputError(path, number, "a NUL character in the line")
            continue
        ident = None
        if epd:
            fields = text.split(None, 4)
            if len(fields) < 4:
                yield InputError(path, number, f"EPD line has {len(fields)} fields before its operations, not 4")
                continue
            ops = fields[4] if len(fields) > 4 else ""
            halfmove = _HMVC.search(ops)
            fullmove = _FMVN.search(ops)
            row = " ".join(fields[:4] + [halfmove.group(1) if halfmove else "0",
                                         fullmove.group(1) if fullmove else "1"])
            found = _ID.search(ops)
            ident = found.group(1) if found else None
        else:
            row = " ".join(text.split())
        yield row_position(path, number, row, ident)


def row_position(source, number: int, row: str, ident: str | None = None):
    """A FEN row (`FEN [moves ...]`) as a Position; its moves are played
    here to name the position analysed, so a bad one is an InputError."""
    fen = row
    if " moves " in row:
        fen, why = row_fen(row)
        if not fen:
            return InputError(source, number, why or "invalid FEN or move")
    return Position(source, number, None, 0, fen, row, None, ident)


def row_fen(row: str) -> tuple[str, str]:
    """(the FEN of the position a row names, after its moves, as
    python-chess's Board.fen(); "") or ("", why it is refused): one call
    into the native core, else python-chess (2,000 rows of a game's moves
    took ~1 s through python-chess boards)."""
    from lc0_rocm import native_core
    data = row.encode()
    if native_core.available()[0] and len(data) < 1 << 20:
        ffi, lib = native_core.load()
        fen, why = ffi.new("char[]", 128), ffi.new("char[]", 512)
        native_core.check(lib.lc0core_position_row_fen(data, fen, 128, why, 512))
        return ffi.string(fen).decode(), ffi.string(why).decode(errors="replace")
    try:
        return board_of_row(row).fen(), ""
    except ValueError as e:
        return "", str(e) or "invalid FEN or move"


def board_of_row(row: str) -> chess.Board:
    """A python-chess board (with the row's moves as its history)."""
    fen, _, moves = row.partition(" moves ")
    board = chess.Board(fen)
    for move in moves.split():
        board.push_uci(move)
    return board


def row_error(row: str) -> str:
    """Why the engine refuses a row ("" when it takes it): the native
    core's verdict (its FEN parser and move rules), else python-chess's."""
    from lc0_rocm import native_core
    if native_core.available()[0]:
        ffi, lib = native_core.load()
        data = row.encode()
        if len(data) >= 1 << 20:
            return "line too long"
        out = ffi.new("char[]", 512)
        native_core.check(lib.lc0core_position_row_error(data, out, 512))
        return ffi.string(out).decode(errors="replace")
    try:
        board = board_of_row(row)
    except ValueError as e:
        return str(e) or "invalid FEN or move"
    status = board.status() & ~(chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK)
    if not status:
        return ""
    names = [flag.name.lower().replace("_", " ") for flag in chess.Status if flag.name and status & flag]
    return "impossible position: " + ", ".join(names)


# ---------------------------------------------------------------- PGN
class LineCounter:
    """A text handle that counts the lines read through it and notes the
    first non-blank one since `mark()` that is not a PGN escape line (`%`,
    which python-chess skips): a game's first line. `taken` holds the
    lines read since `mark()` (a game's text, to read it again). `games`
    counts the games pgn_items read through it."""

    def __init__(self, handle):
        self.handle, self.count, self.first, self.games = handle, 0, None, 0
        self.taken: list[str] = []

    def mark(self) -> None:
        self.first = None
        self.taken = []

    def readline(self) -> str:
        line = self.handle.readline()
        if line:
            self.count += 1
            self.taken.append(line)
            if self.first is None and line.strip() and not line.startswith("%"):
                self.first = self.count
        return line


class QuietGameBuilder(chess.pgn.GameBuilder):
    """python-chess's game builder, keeping errors in `game.errors` without
    logging them (the errors file reports them)."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


class CoreSanGameBuilder(QuietGameBuilder):
    """QuietGameBuilder with the mainline's SAN tokens parsed and played by
    the native core (python-chess's parse_san was half of reading a game,
    and its board's push most of the rest). python-chess's board plays the
    mainline's first move and then falls behind: the moves the core played
    alone are pushed onto it only when python-chess needs it (a variation
    begins: read_game copies it; a token the core is not sure of: python-
    chess parses it there). Every token in a variation, and a variant or
    Chess960 game, python-chess parses (the core then plays python-chess's
    move on the mainline)."""

    def begin_game(self) -> None:
        super().begin_game()
        self._core_game = None
        self._core_on = True
        self._core_tried = False         # the core failed on the token python-chess parses now
        self._depth = 0
        self._board: chess.Board | None = None   # python-chess's mainline board, `_behind` moves behind
        self._behind: list[chess.Move] = []

    def _catch_up(self) -> None:
        for move in self._behind:
            self._board.push(move)
        self._behind.clear()

    def begin_variation(self):
        self._catch_up()                 # read_game copies the board right after this
        self._depth += 1
        return super().begin_variation()

    def end_variation(self) -> None:
        self._depth -= 1
        super().end_variation()

    def begin_parse_san(self, board: chess.Board, san: str):
        # The core's game starts at the first move, which python-chess's
        # board plays itself (parse_san): read_game starts a variation only
        # on a board with a move played.
        if self._depth or not self._core_on or self._core_game is None:
            return None
        uci = self._core_game.push_san(san)
        self._board = board
        if uci is None:                  # python-chess parses it (parse_san), on a board caught up
            self._catch_up()
            self._core_tried = True
            return None
        move = _move(uci)
        self.visit_move(board, move)
        self._behind.append(move)
        return chess.pgn.SKIP

    def parse_san(self, board: chess.Board, san: str) -> chess.Move:
        if self._depth or not self._core_on:
            return board.parse_san(san)
        game = self._core_game or self._start_core_game()
        if game is None:
            return board.parse_san(san)
        if not self._core_tried:
            uci = game.push_san(san)
            if uci is not None:
                return _move(uci)
        self._core_tried = False
        move = board.parse_san(san)           # its errors end the mainline's reading
        try:
            game.push(move.uci())
        except ValueError:
            self._core_on = False
        return move

    def _start_core_game(self):
        from lc0_rocm import native_rules
        try:
            fen = start_fen(self.game)
            self._core_game = None if fen is None else native_rules.Game(fen)
        except (ValueError, RuntimeError):
            self._core_game = None
        self._core_on = self._core_game is not None
        return self._core_game


_MOVES: dict[str, chess.Move] = {}


def _move(uci: str) -> chess.Move:
    """A UCI move as python-chess's Move, one object per move text (a game
    node keeps its move and never changes it)."""
    move = _MOVES.get(uci)
    if move is None:
        move = _MOVES[uci] = chess.Move.from_uci(uci)
    return move


def start_fen(game: chess.pgn.Game) -> str | None:
    """The game's start position's FEN for the core, None for a variant or
    Chess960 game (python-chess's own reading of its headers)."""
    if "FEN" not in game.headers and "Variant" not in game.headers:
        return chess.STARTING_FEN
    board = game.board()
    if type(board) is not chess.Board or board.chess960:
        return None
    return board.fen()


def read_game(handle, core_san: bool = False) -> chess.pgn.Game | None:
    """The next game, as python-chess's game builder reads it (`core_san`:
    its mainline's SAN through the native core, the same game)."""
    from lc0_rocm import native_core
    builder = CoreSanGameBuilder if core_san and native_core.available()[0] else QuietGameBuilder
    return chess.pgn.read_game(handle, Visitor=builder)


NOT_A_GAME = "no tag, move or result here: not a PGN game"


class GameProblem(NamedTuple):
    """A game that cannot be analysed, numbered within what was read (a
    part of a file read apart is renumbered by its reader)."""
    source: str
    line: int
    game: int
    problem: str

    def error(self, line_offset: int = 0, game_offset: int = 0) -> InputError:
        return InputError(self.source, self.line + line_offset, f"game {self.game + game_offset}: {self.problem}")


def _pgn_positions(path: str, handle, selection: Selection) -> Iterator[Position | InputError]:
    for item in pgn_items(path, handle, selection):
        yield item.error() if isinstance(item, GameProblem) else item


def pgn_items(path: str, handle, selection: Selection,
              lines: "LineCounter | None" = None) -> Iterator[Position | InputError | GameProblem]:
    """A PGN text's positions, games numbered from 1 and lines from 1 (as
    `lines`, which counts them, reads them). A game is read as python-chess
    reads it; its moves, where they can be, through the native core
    (MainlineTokens)."""
    lines = lines or LineCounter(handle)
    while True:
        lines.mark()
        try:
            tokens = chess.pgn.read_game(lines, Visitor=MainlineTokens)
            if tokens is None:
                return
            if tokens.not_a_game():
                lines.games += 1
                yield GameProblem(path, lines.first or lines.count, lines.games, NOT_A_GAME)
                continue
            fast = tokens.moves()
        except (ValueError, KeyError, IndexError):   # python-chess's reading raised: it tells why below
            fast = None
        if fast is not None:
            start, ucis = fast
        else:                             # python-chess's whole reading of this game's text
            try:
                game = read_game(io.StringIO("".join(lines.taken)))
            except (ValueError, KeyError, IndexError) as e:   # python-chess gives up on this game
                yield InputError(path, lines.first or lines.count, f"unreadable game: {e}")
                continue
            if game is None:
                return
            problem = game_problem(game)
            start = game.board().fen() if not problem else None
            ucis = [m.uci() for m in game.mainline_moves()] if not problem else None
        lines.games += 1
        number = lines.games
        first_line = lines.first or lines.count
        if ucis is None:
            yield GameProblem(path, first_line, number, problem)
            continue
        yield from game_positions(path, first_line, number, start, ucis, selection)


class MainlineTokens(chess.pgn.BaseVisitor):
    """A game read by python-chess's PGN reader without playing its moves
    (its SAN parsing and board pushes were ~85 % of reading a PGN): the
    start position and the mainline's SAN tokens as text, for the native
    core. The first move is played by python-chess, so the reader has a
    move stack and skips variations as it does for the game builder.
    `plain` is false where the game needs python-chess's whole reading: an
    error, a variant or Chess960, an impossible start position."""

    def begin_game(self) -> None:
        self.fen: str | None = None
        self.tokens: list[str] = []
        self.plain = True
        self.standard_start = True    # no FEN or Variant header
        self.tags = 0
        self.result_token = False

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.tags += 1
        if tagname in ("FEN", "Variant"):
            self.standard_start = False

    def visit_result(self, result: str) -> None:
        self.result_token = True

    def not_a_game(self) -> bool:
        """No tag, move or result: text that is not PGN (python-chess reads
        any text as a game: a binary file, a stray comment, junk after the
        last game would each be a game from the start position)."""
        return not self.tags and not self.tokens and not self.result_token

    def visit_board(self, board: chess.Board) -> None:
        if self.fen is not None:      # after each move
            return
        if self.standard_start:       # the reader made chess.Board() (its fen() costs ~0.1 ms)
            self.fen = chess.STARTING_FEN
            return
        self.fen = board.fen()
        if type(board) is not chess.Board or board.chess960 or _impossible(board):
            self.plain = False

    def begin_variation(self):
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str):
        self.tokens.append(san)
        return None if len(self.tokens) == 1 else chess.pgn.SKIP

    def handle_error(self, error: Exception) -> None:
        self.plain = False

    def result(self) -> "MainlineTokens":
        return self

    def moves(self) -> tuple[str, list[str]] | None:
        """(start FEN, mainline UCI moves), or None: python-chess must read
        the game whole."""
        ucis = san_moves(self.fen, self.tokens) if self.plain and self.fen is not None else None
        return None if ucis is None else (self.fen, ucis)


def san_moves(fen: str, tokens: list[str]) -> list[str] | None:
    """A game's SAN tokens played from `fen` as UCI moves, through the
    native core; None where it cannot be sure of each as python-chess
    would read it (then python-chess reads the game), or is not built."""
    return core_line("lc0core_san_moves", fen, tokens, 6)


def core_line(function: str, fen: str, words: list[str], longest: int) -> list[str] | None:
    """A line of moves played from `fen` by the core's `function`
    (lc0core_san_moves, lc0core_uci_sans: each word in, its other notation
    out, at most `longest` bytes and a space each); None unless every word
    became a move, or with the core not built."""
    from lc0_rocm import native_core
    if not words:
        return []
    text = " ".join(words).encode()
    if not native_core.available()[0] or len(text) >= 1 << 19:
        return None
    ffi, lib = native_core.load()
    size = longest * len(words) + 1
    out, resolved = ffi.new("char[]", size), ffi.new("int*")
    if getattr(lib, function)(fen.encode(), text, out, size, resolved) != 0 or resolved[0] != len(words):
        return None
    return ffi.string(out).decode().split(" ")


def game_problem(game: chess.pgn.Game) -> str:
    """Why a game cannot be analysed ("" when it can)."""
    if game.errors:
        return "; ".join(str(e) for e in game.errors[:3])
    board = game.board()
    if type(board) is not chess.Board or board.chess960:
        return f"variant {game.headers.get('Variant', '?')!r} is not supported (standard chess only)"
    if _impossible(board):
        return f"impossible start position ({_impossible(board)!r})"
    return ""


def _impossible(board: chess.Board) -> chess.Status:
    """What makes a start position impossible (python-chess's status, but
    for checks it calls too many, which the core plays on)."""
    return board.status() & ~(chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK)


def game_positions(path: str, line: int, number: int, start: str, ucis: list[str],
                   selection: Selection) -> Iterator[Position]:
    """A game's positions from its start FEN and mainline moves."""
    fens, clocks = game_fens(start, ucis)
    last = len(ucis)
    for ply in range(last + 1):
        if not selection.wants(ply, ply == last):
            continue
        start = 0
        if ply >= HISTORY - 1:   # back to the zeroing move before the 8th newest position
            start = max(0, ply - (HISTORY - 1) - clocks[ply - (HISTORY - 1)])
        row = fens[start] if start == ply else f"{fens[start]} moves {' '.join(ucis[start:ply])}"
        yield Position(path, line, number, ply, fens[ply], row, ucis[ply] if ply < last else None)


def game_fens(start: str, ucis: list[str]) -> tuple[list[str], list[int]]:
    """The FEN (python-chess's Board.fen()) and halfmove clock of the
    position `start` and of each after it as `ucis` are played: in one
    native call (python-chess's fen() was ~60 % of reading a PGN), else, or
    for a game the core refuses (a null move), through python-chess."""
    from lc0_rocm import native_core
    row = f"{start} moves {' '.join(ucis)}" if ucis else start
    if native_core.available()[0] and len(row) < 1 << 19:
        ffi, lib = native_core.load()
        size = len(ucis) + 1
        out, clocks = ffi.new("char[]", 128 * size), ffi.new("int32_t[]", size)
        count, why = ffi.new("int*"), ffi.new("char[]", 256)
        native_core.check(lib.lc0core_row_fens(row.encode(), out, 128 * size, clocks, size, count, why, 256))
        if count[0] == size:
            texts = ffi.buffer(out, 128 * size)[:].split(b"\0", size)[:size]
            return [t.decode() for t in texts], list(clocks)
    board = chess.Board(start)
    fens, halfmoves = [start], [board.halfmove_clock]
    for uci in ucis:
        board.push_uci(uci)
        fens.append(board.fen())
        halfmoves.append(board.halfmove_clock)
    return fens, halfmoves


def positions_from_items(items: Iterable, source: str = "<input>") -> Iterator[Position | InputError]:
    """Positions given in memory: chess.Boards (their move stacks are the
    history) or FEN strings ("FEN [moves m1 ...]"), numbered from 1."""
    for number, item in enumerate(items, start=1):
        if isinstance(item, chess.Board):
            if type(item) is not chess.Board or item.chess960:
                yield InputError(source, number, "only standard chess boards can be analysed")
                continue
            yield board_position(source, number, item)
        elif isinstance(item, str):
            if "\0" in item:
                yield InputError(source, number, "a NUL character in the FEN")
                continue
            yield row_position(source, number, " ".join(item.split()))
        else:
            raise TypeError(f"positions must be chess.Board or FEN strings, got {type(item).__name__}")


def board_position(source: str, number: int, board: chess.Board) -> Position:
    """A board's row: its game back to the zeroing move before its eighth
    newest position."""
    moves = board.move_stack
    replay = board.copy()
    ply = len(moves)
    start = ply
    # Walk back as the game rows do: 7 plies, then to the last zeroing move.
    while start > 0 and (ply - start < HISTORY - 1 or replay.halfmove_clock > 0):
        replay.pop()
        start -= 1
    if any(not m for m in moves[start:]):   # a null move: the core's games cannot hold one
        start, replay = ply, board.copy(stack=False)
    row = replay.fen() if start == ply else f"{replay.fen()} moves {' '.join(m.uci() for m in moves[start:])}"
    return Position(source, number, None, ply, board.fen(), row)
