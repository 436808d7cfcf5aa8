"""The position at the search's current tree node: one python-chess board
that moves are pushed onto and popped off while the search walks the tree,
plus lc0's repetition bookkeeping (repetition count and cycle length of every
position since the game start), which the tree's draw rules need."""
from __future__ import annotations

import chess


def board_key(board: chess.Board, is_root: bool = False) -> tuple:
    """Identity of a position for repetitions and the NN cache: pieces,
    side to move, castling rights and the en-passant square when a pawn of
    the side to move attacks it (lc0 keeps the e.p. flag only then; a FEN's
    own e.p. square counts as written)."""
    ep = board.ep_square
    if ep is not None and not is_root and not (chess.BB_PAWN_ATTACKS[not board.turn][ep]
                                               & board.pawns & board.occupied_co[board.turn]):
        ep = None
    return (board.pawns, board.knights, board.bishops, board.rooks, board.queens,
            board.kings, board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK],
            board.turn, board.clean_castling_rights(), ep)


_LIGHT = 0x55AA55AA55AA55AA
_DARK = 0xAA55AA55AA55AA55


def has_mating_material(board: chess.Board) -> bool:
    """lc0's HasMatingMaterial (a draw when false): any pawn, rook or queen
    can mate; with fewer than four pieces nothing else can; a knight can;
    bishops only when they stand on both colours."""
    if board.pawns or board.rooks or board.queens:
        return True
    if chess.popcount(board.occupied) < 4:
        return False
    if board.knights:
        return True
    return bool(board.bishops & _LIGHT) and bool(board.bishops & _DARK)


class PositionWalker:
    """A board at some tree node plus, for every position from the game's
    start, its key, rule-50 count, repetition count and cycle length."""

    def __init__(self, board: chess.Board):
        root = board.root()
        self.board = root
        self.keys: list[tuple] = []
        self.rule50: list[int] = []
        self.repetitions: list[int] = []
        self.cycle: list[int] = []
        self._append_current(is_root=True)
        # For the history fill of the input planes (lc0's fen_only).
        self.root_ep = root.ep_square
        self.root_is_startpos = self.keys[0] == _STARTPOS_KEY
        for move in board.move_stack:
            self.push(move)
        self.game_length = len(self.keys)   # positions up to the search root

    def _append_current(self, is_root: bool = False) -> None:
        b = self.board
        key = board_key(b, is_root)
        r50 = b.halfmove_clock
        reps, cycle = 0, 0
        keys, rule50 = self.keys, self.rule50
        # lc0's ComputeLastMoveRepetitions: same side to move, back in steps
        # of two, no further than the last zeroing move.
        if r50 >= 4:
            idx = len(keys) - 4
            while idx >= 0:
                if keys[idx] == key:
                    cycle = len(keys) - idx
                    reps = 1 + self.repetitions[idx]
                    break
                if rule50[idx] < 2:
                    break
                idx -= 2
        keys.append(key)
        rule50.append(r50)
        self.repetitions.append(reps)
        self.cycle.append(cycle)

    def push(self, move: chess.Move) -> None:
        self.board.push(move)
        self._append_current()

    def pop(self) -> None:
        self.board.pop()
        self.keys.pop()
        self.rule50.pop()
        self.repetitions.pop()
        self.cycle.pop()

    @property
    def depth(self) -> int:
        """Plies below the search root."""
        return len(self.keys) - self.game_length


_STARTPOS_KEY = board_key(chess.Board(), is_root=True)
