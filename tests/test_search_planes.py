"""The search's fast leaf planes and policy indices equal lc0_rocm.encoder's
(which tests/test_encoder.py checks against lc0) for classical formats."""
from __future__ import annotations

import random

import chess
import numpy as np
import pytest

from lc0_rocm import encoder
from lc0_rocm.search import leaf_planes
from lc0_rocm.search.positions import PositionWalker

STARTS = [
    chess.STARTING_FEN,
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",     # FEN with e.p.
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 2",     # black to move, e.p.
    "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 12 40",
    "8/5pk1/6p1/8/3R4/6P1/5PKP/r7 b - - 3 41",
]


def games(seed: int = 7):
    """Boards with histories: random games from each start, with shuffles
    of knights to make repetitions."""
    rng = random.Random(seed)
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"] * 3
    for fen in (chess.STARTING_FEN, "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2"):
        board = chess.Board(fen)
        for uci in shuffle:
            board.push_uci(uci)
            yield board.copy()
    for fen in STARTS:
        board = chess.Board(fen)
        yield board.copy()
        for ply in range(40):
            moves = list(board.legal_moves)
            if not moves:
                break
            if ply % 10 < 4:                     # knight shuffles repeat positions
                knights = [m for m in moves if board.piece_type_at(m.from_square) == chess.KNIGHT
                           and board.piece_at(m.to_square) is None]
                moves = knights or moves
            board.push(rng.choice(moves))
            yield board.copy()


@pytest.mark.parametrize("input_format", leaf_planes.FAST_FORMATS)
def test_leaf_planes_equal_encoder(input_format):
    checked = repeated = 0
    for board in games():
        walker = PositionWalker(board)
        masks, rule50 = leaf_planes.planes_classical(walker, input_format)
        ref_masks, ref_values, transform = encoder.encode_packed(board, input_format)
        assert transform == 0
        assert np.array_equal(masks, ref_masks), board.fen()
        assert ref_values[109] == rule50 and np.all(np.delete(ref_values, 109) == 1)
        checked += 1
        repeated += int(ref_masks[12] != 0)
    assert checked > 150 and repeated > 0


def test_policy_indices_equal_encoder():
    for board in games(seed=11):
        moves = list(board.legal_moves)
        ours = leaf_planes.policy_indices_classical(board, moves)
        ref_moves, ref = encoder.policy_indices(board, 1)
        assert list(ref_moves) == moves and ours == list(ref)
    castle = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1")
    moves = [chess.Move.from_uci("e8g8"), chess.Move.from_uci("e8c8")]
    assert leaf_planes.policy_indices_classical(castle, moves) == list(
        encoder.policy_indices(castle, 1)[1][[m in moves for m in castle.legal_moves]])


@pytest.mark.parametrize("input_format", [3, 4, 5])
def test_policy_indices_under_canonical_transforms(input_format):
    """With the planes' transform (flip / mirror / transpose), our indices
    equal the encoder's; the positions include pawnless, castle-less ones."""
    boards = list(games(seed=5)) + [
        chess.Board("8/8/8/8/8/2k5/8/4K2Q w - - 0 1"),
        chess.Board("8/8/3k4/8/8/8/1K6/6q1 b - - 0 1"),
        chess.Board("7k/8/8/8/8/8/8/K6R w - - 0 1"),
        chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 0 1"),
    ]
    transforms = set()
    for board in boards:
        _, _, transform = encoder.encode_packed(board, input_format)
        transforms.add(transform)
        moves = list(board.legal_moves)
        ours = leaf_planes.policy_indices_classical(board, moves, transform)
        assert ours == list(encoder.policy_indices(board, input_format, transform)[1]), board.fen()
    assert len(transforms) > 2
