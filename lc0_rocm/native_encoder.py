"""python-chess boards -> the native core's batch encoding (one call per batch).

    batch = native_encoder.encode_boards(boards, input_format)   # None: no native core
    batch.masks, batch.values, batch.transforms       # as encoder.encode_batch_packed
    probs = batch.legal_softmax(logits)               # per legal move, flat
    batch.moves(i), batch.probabilities(probs, i)     # board i's chess.Moves and values

Each board travels as the position a window of its game starts at and the
moves from there: the window reaches back as far as lc0's history and
repetition rules look (8 positions, then to the zeroing move before the
oldest of them), read off python-chess's private per-move states
(`board._stack`, as encoder._read_history does) or, without them, off the
public `board.root()` and the whole move stack. The core replays the moves
(each checked against its legal moves), encodes, lists the legal moves in
python-chess's order with their policy indices.

A board the core refuses (an impossible position, an illegal move in the
stack, a variant board, anything not a plain chess.Board) is encoded by the
Python encoder instead (`batch.refused`), so results and errors are the
Python path's.
"""
from __future__ import annotations

import threading

import chess
import numpy as np

from lc0_rocm import native_core
from lc0_rocm.sizes import HISTORY, NUM_PLANES, POLICY_SIZE

MAX_MOVES = 256                    # the core's bound on legal moves per position


def core():
    """(ffi, lib) of the native core, or None when it cannot be had."""
    ok, _ = native_core.available()
    return native_core.load() if ok else None


_table_lock = threading.Lock()
_move_table: list | None = None


def move_table() -> list:
    """chess.Move by the core's 16-bit python-chess move (from | to << 6 |
    promotion << 12), built once."""
    global _move_table
    if _move_table is not None:
        return _move_table
    with _table_lock:
        if _move_table is None:
            table = [None] * (6 << 12)
            for promotion in (None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
                base = (promotion or 0) << 12
                for to_square in range(64):
                    for from_square in range(64):
                        table[base | to_square << 6 | from_square] = chess.Move(
                            from_square, to_square, promotion)
            _move_table = table
        return _move_table


_WORDS = 15        # per board, see lc0core_encode.h
_NO_EP = 64


def _root_words(state, board: chess.Board, game_start: bool) -> tuple:
    """The 15 words of a window's first position: a python-chess state, or a
    board (the board itself, or its root())."""
    if isinstance(state, chess.Board):
        white, black = state.occupied_co[chess.WHITE], state.occupied_co[chess.BLACK]
    else:
        white, black = state.occupied_w, state.occupied_b
    ep = state.ep_square
    return (state.pawns, state.knights, state.bishops, state.rooks, state.queens, state.kings,
            white, black, state.castling_rights, state.turn, _NO_EP if ep is None else ep,
            state.halfmove_clock, state.fullmove_number, game_start, board.chess960)


class BoardBatch:
    """The core's encoding of a batch of boards (see the module docstring)."""

    def __init__(self, ffi, lib, n: int, input_format: int):
        self.ffi, self.lib, self.n, self.input_format = ffi, lib, n, input_format
        # The core writes every board's planes, transform, status and offset,
        # and the moves up to the last offset: nothing here needs zeroing.
        self.masks = np.empty((n, NUM_PLANES), dtype=np.uint64)
        self.values = np.empty((n, NUM_PLANES), dtype=np.float32)
        self.transforms = np.empty(n, dtype=np.int32)
        self.legal = np.empty(n * MAX_MOVES, dtype=np.uint16)
        self.indices = np.empty(n * MAX_MOVES, dtype=np.int16)
        self.offsets = np.empty(n + 1, dtype=np.int32)
        self.status = np.empty(n, dtype=np.int32)
        self.refused: list[int] = []

    def _ptr(self, ctype: str, array: np.ndarray):
        return self.ffi.cast(ctype, array.ctypes.data)

    def legal_softmax(self, logits: np.ndarray) -> np.ndarray:
        """Softmax of each board's logits (n, 1858) over its legal moves,
        flat in board order (refused boards have none here)."""
        logits = np.ascontiguousarray(logits, dtype=np.float32)
        if logits.shape != (self.n, POLICY_SIZE):
            raise ValueError(f"logits must have shape ({self.n}, {POLICY_SIZE}), got {logits.shape}")
        probs = np.empty(int(self.offsets[-1]), dtype=np.float32)
        native_core.check(self.lib.lc0core_legal_softmax_batch(
            self.n, self._ptr("float*", logits), self._ptr("int16_t*", self.indices),
            self._ptr("int32_t*", self.offsets), 1.0, self._ptr("float*", probs)))
        return probs


def _gather(boards: list):
    """(words (15 per board), move codes, move offsets, boards to refuse)."""
    words, moves, offsets, refuse = [], [], [0], []
    add_words, add_move, add_offset = words.extend, moves.append, offsets.append
    board_type, fast = chess.Board, hasattr(chess, "_BoardState")
    last = HISTORY - 1
    for i, board in enumerate(boards):
        if type(board) is not board_type:
            refuse.append(i)
            add_words((0,) * _WORDS)
            add_offset(len(moves))
            continue
        played = board.move_stack
        current = len(played)
        stack = board._stack if fast else None
        if stack is not None and len(stack) == current:
            start = 0
            if current >= last:   # back to the zeroing move before the 8th newest position
                start = current - last - stack[current - last].halfmove_clock
                if start < 0:
                    start = 0
            add_words(_root_words(stack[start] if start < current else board, board, start == 0))
            window = played[start:] if start else played
        else:                     # no python-chess internals: the public root
            add_words(_root_words(board.root(), board, True))
            window = played
        for m in window:
            add_move(m.from_square | m.to_square << 6 | (m.promotion or 0) << 12)
        add_offset(len(moves))
    return words, moves, offsets, refuse


def encode_boards(boards: list, input_format: int) -> BoardBatch | None:
    """The batch encoded by the core, or None when there is no core. Boards
    it refuses are listed in `refused` with empty planes and no moves."""
    loaded = core()
    if loaded is None:
        return None
    ffi, lib = loaded
    n = len(boards)
    words, moves, offsets, refuse = _gather(boards)
    try:
        words_a = np.array(words, dtype=np.uint64)
        moves_a = np.array(moves, dtype=np.uint16)
        offsets_a = np.array(offsets, dtype=np.int32)
    except (OverflowError, ValueError):
        return None   # a number python-chess allows that does not fit: the Python path
    batch = BoardBatch(ffi, lib, n, input_format)
    p = batch._ptr
    native_core.check(lib.lc0core_encode_batch(
        n, p("uint64_t*", words_a), p("uint16_t*", moves_a), p("int32_t*", offsets_a),
        input_format, p("uint64_t*", batch.masks), p("float*", batch.values),
        p("int32_t*", batch.transforms), p("uint16_t*", batch.legal), p("int16_t*", batch.indices),
        p("int32_t*", batch.offsets), len(batch.legal), p("int32_t*", batch.status)))
    batch.status[refuse] = -1
    batch.refused = np.flatnonzero(batch.status).tolist()
    return batch
