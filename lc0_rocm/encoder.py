"""python-chess positions -> lc0's 112 input planes, and legal moves -> policy indices.

Plane layout (see docs/LC0-FACTS.md): 8 history boards x 13 planes, newest
first (our P N B R Q K, their P N B R Q K, repetition), then 8 auxiliary planes.
Everything is in the side-to-move frame: ranks are mirrored when black is to move.
A plane is a 64-bit mask (bit i = square i, a1 = 0) times a value; `encode_packed`
returns exactly lc0's (mask, value) pairs, `encode` the unpacked (112, 8, 8) planes.

History follows lc0 v0.32.1 with its default `fen_only` fill: a game that
started from the standard start position leaves missing boards zero; a game
from any other FEN fills them with copies of its first position, with the
double pawn push undone when that position has an en-passant square.

En passant follows lc0, not python-chess: after a double push the flag is set
only if a pawn of the side to move stands next to the pushed pawn (legal or
not); a FEN's e.p. square is taken as written.

Canonical formats (3, 4, 132, 5, 133) also stop the history at a castling
change, an e.p. position or a zeroing move, and transform the board when no
castling is possible (FLIP files, MIRROR ranks, TRANSPOSE across a8-h1).
Canonical-v2 keeps only repeated positions after the current one; where lc0
v0.32.1 loops forever (a FEN with rule-50 > 0 and no repetition), we simply
stop at the first position of the game.
"""
from __future__ import annotations

import dataclasses

import chess
import numpy as np

from lc0_rocm import tables
from lc0_rocm.errors import InvalidArgumentError
from lc0_rocm.sizes import HISTORY, NUM_PLANES, PLANES_PER_BOARD

INPUT_CLASSICAL = 1
INPUT_CASTLING_PLANE = 2
INPUT_CANONICAL = 3
INPUT_CANONICAL_HECTOPLIES = 4
INPUT_CANONICAL_HECTOPLIES_ARMAGEDDON = 132
INPUT_CANONICAL_V2 = 5
INPUT_CANONICAL_V2_ARMAGEDDON = 133
INPUT_FORMATS = (1, 2, 3, 4, 132, 5, 133)

# lc0's transform bits.
FLIP = 1        # files a <-> h
MIRROR = 2      # ranks 1 <-> 8
TRANSPOSE = 4   # across the a8-h1 diagonal: (rank, file) -> (7 - file, 7 - rank)

AUX_BASE = HISTORY * PLANES_PER_BOARD  # 104: the first auxiliary plane

ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_PIECE_TYPES = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def is_canonical(input_format: int) -> bool:
    return input_format >= INPUT_CANONICAL


def is_hectoplies(input_format: int) -> bool:
    return input_format >= INPUT_CANONICAL_HECTOPLIES


def is_armageddon(input_format: int) -> bool:
    return input_format in (INPUT_CANONICAL_HECTOPLIES_ARMAGEDDON, INPUT_CANONICAL_V2_ARMAGEDDON)


def check_input_format(input_format: int) -> int:
    if input_format not in INPUT_FORMATS:
        raise InvalidArgumentError(f"unsupported input format {input_format!r}; lc0 input formats are "
                         f"{', '.join(map(str, INPUT_FORMATS))}")
    return int(input_format)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One position of the game, in real orientation, as lc0 sees it."""

    pieces: tuple[int, ...]   # 12 bitboards: white P N B R Q K, black P N B R Q K
    turn: chess.Color
    castling: int             # bitboard of rooks that still carry castling rights
    ep_file: int | None       # lc0's en-passant flag (file), see module docstring
    rule50: int

    @property
    def key(self):
        """What lc0 compares to detect a repetition."""
        return self.pieces, self.turn, self.castling, self.ep_file


def _snapshot(board: chess.Board, is_root: bool) -> Snapshot:
    white, black = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
    bbs = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    ep_file = None
    if board.ep_square is not None:
        # Pawns of the side to move that attack the e.p. square (pseudo-legal, like lc0).
        attackers = chess.BB_PAWN_ATTACKS[not board.turn][board.ep_square]
        if is_root or attackers & board.pawns & board.occupied_co[board.turn]:
            ep_file = chess.square_file(board.ep_square)
    return Snapshot(
        pieces=tuple(bb & white for bb in bbs) + tuple(bb & black for bb in bbs),
        turn=board.turn,
        castling=board.clean_castling_rights(),
        ep_file=ep_file,
        rule50=board.halfmove_clock,
    )


@dataclasses.dataclass
class _History:
    snapshots: dict[int, Snapshot]   # game index (0 = first position) -> snapshot
    current: int                     # game index of the position to encode
    root_is_startpos: bool

    def is_repeated(self, j: int) -> bool:
        """lc0's repetitions >= 1: same position, same side to move, 4+ plies
        back, without looking past a zeroing move."""
        last = self.snapshots[j]
        if last.rule50 < 4:
            return False
        for k in range(j - 4, -1, -2):
            earlier = self.snapshots[k]
            if earlier.key == last.key:
                return True
            if earlier.rule50 < 2:
                return False
        return False


def _read_history(board: chess.Board) -> _History:
    """Walk back from `board` as far as lc0's history and repetition rules look.

    The repetition check of a position looks back at most its rule-50 count;
    canonical-v2 looks back to the last zeroing move. So we keep the 8 newest
    positions and everything back to the oldest of their look-backs.
    """
    current = len(board.move_stack)
    states = getattr(board, "_stack", None)
    if isinstance(states, list) and len(states) == current and hasattr(chess, "_BoardState"):
        # Fast path: python-chess keeps the state before every move (private
        # `_stack`); restoring those onto one scratch board avoids copying the
        # move stack, which costs more than the whole encoding.
        scratch = board.copy(stack=False)

        def position(index: int) -> chess.Board:
            states[index].restore(scratch)
            return scratch
    else:
        walker = board.copy()

        def position(index: int) -> chess.Board:
            walker.pop()   # called for index = current - 1, current - 2, ...
            return walker
    return _walk_back(board, current, position)


def _walk_back(board: chess.Board, current: int, position) -> _History:
    """Snapshots from game index `current` back; `position(i)` gives the board
    at game index i (asked in decreasing order)."""
    snapshots = {current: _snapshot(board, is_root=current == 0)}
    oldest_needed = current - snapshots[current].rule50
    index = current
    while index > 0 and (index > current - HISTORY + 1 or index > oldest_needed):
        index -= 1
        snap = _snapshot(position(index), is_root=index == 0)
        snapshots[index] = snap
        if index > current - HISTORY:
            oldest_needed = min(oldest_needed, index - snap.rule50)
    root_is_startpos = 0 in snapshots and snapshots[0].key == _STARTPOS_KEY
    return _History(snapshots, current, root_is_startpos)


_STARTPOS_KEY = _snapshot(chess.Board(), is_root=True).key


def _undo_double_push(snap: Snapshot) -> tuple[int, ...]:
    """Pieces of a FEN's first position with its e.p. double push taken back."""
    pieces = list(snap.pieces)
    f = snap.ep_file
    if snap.turn == chess.BLACK:   # white pushed f2-f4
        pieces[0] = (pieces[0] & ~chess.BB_SQUARES[24 + f]) | chess.BB_SQUARES[8 + f]
    else:                          # black pushed f7-f5
        pieces[6] = (pieces[6] & ~chess.BB_SQUARES[32 + f]) | chess.BB_SQUARES[48 + f]
    return tuple(pieces)


def _history_boards(hist: _History, input_format: int) -> list[tuple[tuple[int, ...], bool]]:
    """The (pieces, repeated) of each history slot, newest first, following lc0."""
    canonical = is_canonical(input_format)
    repeats_only = input_format in (INPUT_CANONICAL_V2, INPUT_CANONICAL_V2_ARMAGEDDON)
    cur = hist.snapshots[hist.current]
    slots = []
    index = hist.current
    while len(slots) < HISTORY:
        snap = hist.snapshots[max(index, 0)]
        is_fill = index < 0
        if canonical and snap.castling != cur.castling:
            break
        if canonical and index != hist.current and snap.ep_file is not None:
            break
        if is_fill and hist.root_is_startpos:
            break
        repeated = (not is_fill) and hist.is_repeated(index)
        if repeats_only and slots and not repeated:
            # Fill copies never repeat; lc0 v0.32.1 loops forever on them.
            if snap.rule50 == 0 or is_fill:
                break
            index -= 1
            continue
        pieces = snap.pieces
        if is_fill and snap.ep_file is not None:
            pieces = _undo_double_push(snap)
        slots.append((pieces, repeated))
        if canonical and snap.rule50 == 0:
            break
        index -= 1
    return slots


def _castling_rooks(snap: Snapshot) -> dict[tuple[chess.Color, bool], int]:
    """(color, kingside) -> square of the rook with that castling right."""
    rooks = {}
    for color, back_rank in ((chess.WHITE, chess.BB_RANK_1), (chess.BLACK, chess.BB_RANK_8)):
        king_bb = snap.pieces[5 if color == chess.WHITE else 11] & back_rank
        if not king_bb:
            continue
        king_file = chess.square_file(chess.lsb(king_bb))
        for square in chess.scan_forward(snap.castling & back_rank):
            rooks[(color, chess.square_file(square) > king_file)] = square
    return rooks


# ---- bitboard transforms, vectorised over numpy uint64 arrays ----

def _unpack(masks: np.ndarray) -> np.ndarray:
    """(...,) uint64 -> (..., 8, 8) uint8 bits indexed [rank, file]."""
    masks = np.ascontiguousarray(masks, dtype="<u8")
    bits = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 8), axis=-1, bitorder="little")
    return bits.reshape(*masks.shape, 8, 8)


def _pack(bits: np.ndarray) -> np.ndarray:
    """(..., 8, 8) bits -> (...,) uint64."""
    packed = np.packbits(np.ascontiguousarray(bits).reshape(*bits.shape[:-2], 64), axis=-1,
                         bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").reshape(bits.shape[:-2]).astype(np.uint64)


def transform_bits(bits: np.ndarray, transform: int) -> np.ndarray:
    """Apply lc0's transform to (..., 8, 8) [rank, file] planes: flip, then mirror, then transpose."""
    if transform & FLIP:
        bits = bits[..., :, ::-1]
    if transform & MIRROR:
        bits = bits[..., ::-1, :]
    if transform & TRANSPOSE:
        bits = np.swapaxes(bits[..., ::-1, ::-1], -1, -2)
    return bits


def transform_masks(masks: np.ndarray, transform: int) -> np.ndarray:
    if transform == 0:
        return np.asarray(masks, dtype=np.uint64)
    return _pack(transform_bits(_unpack(masks), transform))


def transform_square(square: np.ndarray | int, transform: int):
    """Square index under lc0's transform (consistent with transform_bits)."""
    rank, file = np.asarray(square) // 8, np.asarray(square) % 8
    if transform & FLIP:
        file = 7 - file
    if transform & MIRROR:
        rank = 7 - rank
    if transform & TRANSPOSE:
        rank, file = 7 - file, 7 - rank
    return rank * 8 + file


def _frame_pieces(pieces: tuple[int, ...], turn: chess.Color) -> tuple[int, ...]:
    """12 real-orientation bitboards -> ours then theirs (mirroring happens later)."""
    return pieces if turn == chess.WHITE else pieces[6:] + pieces[:6]


def _to_mover_frame(masks: np.ndarray, turn: chess.Color) -> np.ndarray:
    return masks if turn == chess.WHITE else masks.byteswap()


def _choose_transform(cur: Snapshot) -> int:
    """lc0's canonical transform for the current position (its ChooseTransform)."""
    if cur.castling:
        return 0
    frame = _to_mover_frame(np.array(_frame_pieces(cur.pieces, cur.turn), dtype=np.uint64), cur.turn)
    ours, theirs = np.bitwise_or.reduce(frame[:6]), np.bitwise_or.reduce(frame[6:])
    king = int(frame[5])
    transform = 0
    if king & 0x0F0F0F0F0F0F0F0F:       # our king on files a-d
        transform |= FLIP
        king = int(transform_masks(np.array([king], dtype=np.uint64), FLIP)[0])
    if frame[0] | frame[6]:              # pawns: only the file flip keeps the game the same
        return transform
    if king & 0xFFFFFFFF00000000:        # our king on ranks 5-8
        transform |= MIRROR
        king = int(transform_masks(np.array([king], dtype=np.uint64), MIRROR)[0])
    if king & 0xE0C08000:                # h2, g3, h3, f4, g4, h4
        return transform | TRANSPOSE
    if king & 0x10204080:                # on the a8-h1 diagonal: break the tie like lc0
        ours_bb, theirs_bb = frame[:6], frame[6:]
        both = ours_bb | theirs_bb       # per piece type: P N B R Q K of both sides
        # lc0's order: all pieces, ours, kings, queens, rooks, knights, bishops.
        candidates = np.array([ours | theirs, ours, both[5], both[4], both[3], both[1], both[2]],
                              dtype=np.uint64)
        plain = transform_masks(candidates, transform)
        transposed = transform_masks(plain, TRANSPOSE)
        for value, alternative in zip(plain.tolist(), transposed.tolist()):
            if value != alternative:
                return transform | TRANSPOSE if value > alternative else transform
    return transform


def _require_board(board) -> None:
    if not isinstance(board, chess.Board):
        raise TypeError(f"expected a chess.Board, got {type(board).__name__}")


def encode_packed(board: chess.Board, input_format: int = INPUT_CLASSICAL):
    """lc0's compact input: (masks (112,) uint64, values (112,) float32, transform)."""
    _require_board(board)
    input_format = check_input_format(input_format)
    hist = _read_history(board)
    cur = hist.snapshots[hist.current]
    masks = np.zeros(NUM_PLANES, dtype=np.uint64)
    values = np.ones(NUM_PLANES, dtype=np.float32)

    slots = _history_boards(hist, input_format)
    pieces = np.array([_frame_pieces(p, cur.turn) for p, _ in slots], dtype=np.uint64).reshape(-1, 12)
    board_masks = masks[:AUX_BASE].reshape(HISTORY, PLANES_PER_BOARD)
    board_masks[:len(slots), :12] = _to_mover_frame(pieces, cur.turn)
    board_masks[:len(slots), 12] = [ALL_ONES if rep else 0 for _, rep in slots]

    rooks = _castling_rooks(cur)
    us, them = cur.turn, not cur.turn
    if input_format == INPUT_CLASSICAL:
        for plane, key in enumerate(((us, False), (us, True), (them, False), (them, True))):
            masks[AUX_BASE + plane] = ALL_ONES if key in rooks else 0
    else:
        for plane, kingside in ((0, False), (1, True)):
            bb = 0
            for color in (chess.WHITE, chess.BLACK):
                if (color, kingside) in rooks:
                    bb |= chess.BB_SQUARES[rooks[(color, kingside)]]
            masks[AUX_BASE + plane] = bb
        masks[AUX_BASE:AUX_BASE + 2] = _to_mover_frame(masks[AUX_BASE:AUX_BASE + 2], cur.turn)

    if is_canonical(input_format):
        if cur.ep_file is not None:
            masks[AUX_BASE + 4] = chess.BB_SQUARES[56 + cur.ep_file]
    elif cur.turn == chess.BLACK:
        masks[AUX_BASE + 4] = ALL_ONES
    masks[AUX_BASE + 5] = ALL_ONES
    values[AUX_BASE + 5] = cur.rule50 / 100.0 if is_hectoplies(input_format) else cur.rule50
    if is_armageddon(input_format) and cur.turn == chess.BLACK:
        masks[AUX_BASE + 6] = ALL_ONES
    masks[AUX_BASE + 7] = ALL_ONES

    transform = _choose_transform(cur) if is_canonical(input_format) else 0
    if transform:
        masks[:AUX_BASE + 5] = transform_masks(masks[:AUX_BASE + 5], transform)
    return masks, values, transform


def unpack(masks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(..., 112) masks and values -> (..., 112, 8, 8) float32 planes."""
    return _unpack(masks).astype(np.float32) * np.asarray(values, dtype=np.float32)[..., None, None]


def encode(board: chess.Board, input_format: int = INPUT_CLASSICAL) -> np.ndarray:
    """lc0's 112 input planes for `board` (with its move stack): (112, 8, 8) float32."""
    masks, values, _ = encode_packed(board, input_format)
    return unpack(masks, values)


def encode_batch_packed(boards, input_format: int = INPUT_CLASSICAL):
    """(masks (N, 112) uint64, values (N, 112) float32, transforms (N,) int)."""
    packed = [encode_packed(b, input_format) for b in boards]
    if not packed:
        return (np.zeros((0, NUM_PLANES), np.uint64), np.zeros((0, NUM_PLANES), np.float32),
                np.zeros(0, np.int64))
    masks, values, transforms = zip(*packed)
    return np.stack(masks), np.stack(values), np.array(transforms, dtype=np.int64)


def encode_batch(boards, input_format: int = INPUT_CLASSICAL) -> np.ndarray:
    """(N, 112, 8, 8) float32 planes for a sequence of boards."""
    masks, values, _ = encode_batch_packed(boards, input_format)
    return unpack(masks, values)


def board_transform(board: chess.Board, input_format: int = INPUT_CLASSICAL) -> int:
    """The transform lc0 applies to `board`'s planes (0 for non-canonical formats)."""
    _require_board(board)
    if not is_canonical(check_input_format(input_format)):
        return 0
    return _choose_transform(_snapshot(board, is_root=not board.move_stack))


_PROMOTION_SLOT = {None: 0, chess.KNIGHT: 0, chess.QUEEN: 1, chess.ROOK: 2, chess.BISHOP: 3}


def move_to_lc0_squares(board: chess.Board, move: chess.Move) -> tuple[int, int]:
    """(from, to) of a move in real orientation with castling as king-takes-rook."""
    to_square = move.to_square
    if board.is_castling(move) and not board.chess960:
        rook_file = 7 if chess.square_file(to_square) > chess.square_file(move.from_square) else 0
        to_square = chess.square(rook_file, chess.square_rank(move.from_square))
    return move.from_square, to_square


def policy_indices(board: chess.Board, input_format: int = INPUT_CLASSICAL,
                   transform: int | None = None) -> tuple[list[chess.Move], np.ndarray]:
    """The legal moves of `board` (real orientation) and their 1858 policy indices.

    Indices are in the side-to-move frame under the same transform as the
    planes (`transform=None`: the one `encode` uses for `input_format`). For
    TRANSPOSE this maps squares across the a8-h1 diagonal, like the planes;
    lc0 v0.32.1 maps them differently (a known lc0 inconsistency).
    """
    _require_board(board)
    if transform is None:
        transform = board_transform(board, input_format)
    moves = list(board.legal_moves)
    squares = np.array([move_to_lc0_squares(board, m) for m in moves], dtype=np.int64).reshape(-1, 2)
    if board.turn == chess.BLACK:
        squares ^= 56
    squares = transform_square(squares, transform)
    slots = np.array([_PROMOTION_SLOT[m.promotion] for m in moves], dtype=np.int64)
    indices = tables.MOVE_INDEX[squares[:, 0], squares[:, 1], slots]
    if (indices < 0).any():
        bad = [m.uci() for m, i in zip(moves, indices) if i < 0]
        raise InvalidArgumentError(f"moves without an lc0 policy index: {bad}")
    return moves, indices.astype(np.int64)
