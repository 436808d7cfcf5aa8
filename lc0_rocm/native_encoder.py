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

from lc0_rocm import encoder
from lc0_rocm.backends.base import NUM_PLANES, POLICY_SIZE

HISTORY = encoder.HISTORY
MAX_MOVES = 256                    # the core's bound on legal moves per position
_ROOT_WORDS, _INFO_WORDS = 9, 6    # see lc0core_encode.h


def core():
    """(ffi, lib) of the native core, or None when it cannot be had."""
    from lc0_rocm import native_core
    ok, _ = native_core.available()
    return native_core.load() if ok else None


_table_lock = threading.Lock()
_move_table: list | None = None


def move_table() -> list:
    """chess.Move by the core's 16-bit python-chess move (from | to << 6 |
    promotion << 12), built once."""
    global _move_table
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


def _window(board: chess.Board):
    """(root state, is the game's first position, moves from it) of `board`."""
    stack = board._stack
    current = len(board.move_stack)
    if len(stack) != current:
        raise AttributeError("python-chess state stack out of step with the move stack")
    start = 0
    if current >= HISTORY - 1:
        oldest = current - (HISTORY - 1)
        start = max(0, oldest - stack[oldest].halfmove_clock)
    root = stack[start] if start < current else board
    return root, start == 0, board.move_stack[start:]


def _root_words(state, board: chess.Board) -> tuple:
    if state is board:
        white, black = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
    else:
        white, black = state.occupied_w, state.occupied_b
    return (state.pawns, state.knights, state.bishops, state.rooks, state.queens, state.kings,
            white, black, state.castling_rights)


class BoardBatch:
    """The core's encoding of a batch of boards (see the module docstring)."""

    def __init__(self, ffi, lib, n: int, input_format: int):
        self.ffi, self.lib, self.n, self.input_format = ffi, lib, n, input_format
        self.masks = np.zeros((n, NUM_PLANES), dtype=np.uint64)
        self.values = np.zeros((n, NUM_PLANES), dtype=np.float32)
        self.transforms = np.zeros(n, dtype=np.int32)
        self.legal = np.zeros(n * MAX_MOVES, dtype=np.uint16)
        self.indices = np.zeros(n * MAX_MOVES, dtype=np.int16)
        self.offsets = np.zeros(n + 1, dtype=np.int32)
        self.status = np.zeros(n, dtype=np.int32)
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
        _check(self.ffi, self.lib, self.lib.lc0core_legal_softmax_batch(
            self.n, self._ptr("float*", logits), self._ptr("int16_t*", self.indices),
            self._ptr("int32_t*", self.offsets), 1.0, self._ptr("float*", probs)))
        return probs


def _check(ffi, lib, status: int) -> None:
    if status != 0:
        message = ffi.string(lib.lc0core_last_error()).decode(errors="replace")
        raise RuntimeError(f"native core: {message or f'status {status}'}")


def encode_boards(boards: list, input_format: int) -> BoardBatch | None:
    """The batch encoded by the core, or None when there is no core. Boards
    it refuses are listed in `refused` with empty planes and no moves."""
    loaded = core()
    if loaded is None:
        return None
    ffi, lib = loaded
    n = len(boards)
    batch = BoardBatch(ffi, lib, n, input_format)
    roots, info, moves, offsets = [], [], [], [0]
    refused_early = []
    fast = hasattr(chess, "_BoardState")
    for i, board in enumerate(boards):
        if type(board) is not chess.Board:
            refused_early.append(i)
            roots.append((0,) * _ROOT_WORDS)
            info.append((0,) * _INFO_WORDS)
            offsets.append(len(moves))
            continue
        try:
            state, game_start, window = _window(board) if fast else (None, True, None)
        except (AttributeError, IndexError):
            state = None
        if state is None:
            state, game_start, window = board.root(), True, board.move_stack
        roots.append(_root_words(state, board))
        ep = state.ep_square
        info.append((1 if state.turn else 0, -1 if ep is None else ep, state.halfmove_clock,
                     state.fullmove_number, 1 if game_start else 0, 1 if board.chess960 else 0))
        moves += [m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in window]
        offsets.append(len(moves))
    try:
        roots_a = np.array(roots, dtype=np.uint64).reshape(n, _ROOT_WORDS)
        info_a = np.clip(np.array(info, dtype=np.int64).reshape(n, _INFO_WORDS),
                         -(1 << 31), (1 << 31) - 1).astype(np.int32)
        moves_a = np.array(moves, dtype=np.uint16)
        offsets_a = np.array(offsets, dtype=np.int32)
    except (OverflowError, ValueError):
        return None   # a number python-chess allows that does not fit: the Python path
    p = batch._ptr
    _check(ffi, lib, lib.lc0core_encode_batch(
        n, p("uint64_t*", roots_a), p("int32_t*", info_a), p("uint16_t*", moves_a),
        p("int32_t*", offsets_a), input_format, p("uint64_t*", batch.masks),
        p("float*", batch.values), p("int32_t*", batch.transforms), p("uint16_t*", batch.legal),
        p("int16_t*", batch.indices), p("int32_t*", batch.offsets), len(batch.legal),
        p("int32_t*", batch.status)))
    batch.status[refused_early] = -1
    batch.refused = np.flatnonzero(batch.status).tolist()
    return batch
