"""The native core's chess rules from Python (include/lc0core_rules.h):
legal moves, perft, FEN checks and a game with lc0's repetition facts; and
`go perft` for the UCI engine, with python-chess when there is no core.

    native_rules.perft(fen, depth)                    # -> nodes
    native_rules.legal_moves(fen)                     # -> ["e2e4", ...]
    game = native_rules.Game(); game.push("e2e4"); game.status()

Positions are FEN text; None is the standard start position. Moves are UCI
text (e1g1 castling in standard chess, e1h1 in Chess960).
"""
from __future__ import annotations

import dataclasses

import chess

from lc0_rocm import native_core
from lc0_rocm.errors import Lc0RocmError

MAX_PERFT_DEPTH = 10
STATUS_NAMES = {1: "invalid argument", 2: "bad FEN", 3: "illegal move", 4: "buffer too small",
                5: "out of memory", 6: "internal error"}


class RulesError(Lc0RocmError, ValueError):
    """A bad FEN, an illegal move or a bad argument, with the core's message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _core():
    return native_core.load()


def _call(status: int) -> None:
    if status != 0:
        raise RulesError(status, native_core.last_error() or STATUS_NAMES.get(status, f"status {status}"))


def _text(fen: str | bytes | None):
    if fen is None:
        return _core()[0].NULL
    return fen.encode() if isinstance(fen, str) else fen


def _uci_list(ffi, lib, call, moves, count: int) -> list[str]:
    out = ffi.new("char[]", 8 * max(count, 1))
    _call(call(moves, count, out, len(out)))
    text = ffi.string(out).decode()
    return text.split() if text else []


# ---------------------------------------------------------------- positions
def normalize_fen(fen: str | None, chess960: bool = False) -> str:
    """The FEN as the core reads it (castling rights and an impossible e.p.
    square cleaned, lc0's e.p. rule not applied); RulesError when bad."""
    ffi, lib = _core()
    out = ffi.new("char[]", 256)
    _call(lib.lc0core_fen_normalize(_text(fen), int(chess960), out, len(out)))
    return ffi.string(out).decode()


def legal_moves(fen: str | None, chess960: bool = False) -> list[str]:
    ffi, lib = _core()
    moves = ffi.new("uint16_t[]", lib.LC0CORE_MAX_MOVES)
    count = ffi.new("int*")
    fen_c = _text(fen)
    _call(lib.lc0core_legal_moves(fen_c, int(chess960), moves, len(moves), count))
    return _uci_list(ffi, lib, lambda m, n, o, c: lib.lc0core_moves_to_uci(fen_c, int(chess960), m, n, o, c),
                     moves, count[0])


def perft(fen: str | None, depth: int, chess960: bool = False) -> int:
    ffi, lib = _core()
    nodes = ffi.new("uint64_t*")
    _call(lib.lc0core_perft(_text(fen), int(chess960), depth, nodes))
    return int(nodes[0])


def perft_divide(fen: str | None, depth: int, chess960: bool = False) -> list[tuple[str, int]]:
    """(UCI move, perft(depth - 1) after it) per legal move."""
    ffi, lib = _core()
    moves = ffi.new("uint16_t[]", lib.LC0CORE_MAX_MOVES)
    nodes = ffi.new("uint64_t[]", lib.LC0CORE_MAX_MOVES)
    count = ffi.new("int*")
    fen_c = _text(fen)
    _call(lib.lc0core_perft_divide(fen_c, int(chess960), depth, moves, nodes, len(moves), count))
    names = _uci_list(ffi, lib, lambda m, n, o, c: lib.lc0core_moves_to_uci(fen_c, int(chess960), m, n, o, c),
                      moves, count[0])
    return [(name, int(nodes[i])) for i, name in enumerate(names)]


# ---------------------------------------------------------------- games
@dataclasses.dataclass(frozen=True)
class GameStatus:
    positions: int
    white_to_move: bool
    legal_moves: int
    in_check: bool
    checkmate: bool
    stalemate: bool
    rule50: int
    fullmove: int
    insufficient_material: bool
    repetitions: int
    cycle_length: int


class Game:
    """A game from `fen` (None: the start position) and the moves pushed."""

    def __init__(self, fen: str | None = None, chess960: bool = False):
        self._ffi, self._lib = _core()
        handle = self._ffi.new("lc0core_game**")
        _call(self._lib.lc0core_game_new(_text(fen), int(chess960), handle))
        self._handle = self._ffi.gc(handle[0], self._lib.lc0core_game_free)
        self._moves = self._ffi.new("uint16_t[]", self._lib.LC0CORE_MAX_MOVES)
        self._count = self._ffi.new("int*")
        self._text = self._ffi.new("char[]", 8 * self._lib.LC0CORE_MAX_MOVES)
        self._played = self._ffi.new("int*")

    def push(self, move: str) -> None:
        _call(self._lib.lc0core_game_push_uci(self._handle, move.encode()))

    def push_san(self, san: str) -> str | None:
        """A PGN SAN token played when the core is sure it is the move
        python-chess's Board.parse_san names: its UCI; else None, nothing
        played."""
        played = self._played
        _call(self._lib.lc0core_game_push_san(self._handle, san.encode(), self._text, len(self._text), played))
        return self._ffi.string(self._text).decode() if played[0] else None

    def pop(self) -> None:
        _call(self._lib.lc0core_game_pop(self._handle))

    def legal_moves(self) -> list[str]:
        lib, moves, count, text = self._lib, self._moves, self._count, self._text
        _call(lib.lc0core_game_legal_moves(self._handle, moves, len(moves), count))
        _call(lib.lc0core_game_moves_to_uci(self._handle, moves, count[0], text, len(text)))
        return self._ffi.string(text).decode().split()

    def fen(self) -> str:
        out = self._ffi.new("char[]", 256)
        _call(self._lib.lc0core_game_fen(self._handle, out, len(out)))
        return self._ffi.string(out).decode()

    def status(self) -> GameStatus:
        s = self._ffi.new("lc0core_game_status*")
        _call(self._lib.lc0core_game_get_status(self._handle, s))
        return GameStatus(**{f.name: int(getattr(s, f.name)) if f.type == "int" else
                             bool(getattr(s, f.name)) for f in dataclasses.fields(GameStatus)})

    def perft_divide(self, depth: int) -> list[tuple[str, int]]:
        moves = self._ffi.new("uint16_t[]", self._lib.LC0CORE_MAX_MOVES)
        nodes = self._ffi.new("uint64_t[]", self._lib.LC0CORE_MAX_MOVES)
        count = self._ffi.new("int*")
        _call(self._lib.lc0core_game_perft_divide(self._handle, depth, moves, nodes, len(moves), count))
        names = _uci_list(self._ffi, self._lib,
                          lambda m, n, o, c: self._lib.lc0core_game_moves_to_uci(self._handle, m, n, o, c),
                          moves, count[0])
        return [(name, int(nodes[i])) for i, name in enumerate(names)]


# ---------------------------------------------------------------- UCI `go perft`
def python_perft(board: chess.Board, depth: int) -> int:
    """perft with python-chess (the fallback; slow)."""
    if depth <= 1:
        return board.legal_moves.count() if depth == 1 else 1
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += python_perft(board, depth - 1)
        board.pop()
    return nodes


def perft_report(board: chess.Board, args: list[str]) -> list[str]:
    """`go perft N` on `board` as Stockfish prints it: `move: nodes` per
    legal move, a blank line, `Nodes searched: total`. ValueError for a bad
    depth; the native core when it is there, else python-chess."""
    try:
        depth = int(args[0]) if len(args) == 1 else None
    except ValueError:
        depth = None
    if depth is None:
        raise ValueError("go perft: expected one depth, e.g. `go perft 5`")
    if not 1 <= depth <= MAX_PERFT_DEPTH:
        raise ValueError(f"go perft: depth must be 1..{MAX_PERFT_DEPTH}")
    divide = None
    if native_core.available()[0]:
        try:
            divide = perft_divide(board.fen(), depth, board.chess960)
        except RulesError:   # a position python-chess plays but the core refuses (fantasy material)
            divide = None
    if divide is None:
        divide = []
        board = board.copy(stack=False)
        for move in list(board.legal_moves):
            name = board.uci(move)
            board.push(move)
            divide.append((name, python_perft(board, depth - 1)))
            board.pop()
    lines = [f"{move}: {nodes}" for move, nodes in divide]
    return lines + ["", f"Nodes searched: {sum(n for _, n in divide)}"]
