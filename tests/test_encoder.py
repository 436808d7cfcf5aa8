"""Encoder parity with lc0 v0.32.1: identical planes for every input format,
identical (mask, value) pairs, and policy indices as GameState.policy_indices()."""
from __future__ import annotations

import gzip

import chess
import numpy as np
import pytest

from lc0_rocm import encoder, tables
from lc0_rocm._proto import net_pb2

from encoder_positions import lc0_v0321_transform_square, positions
from oracle import lc0_planes, oracle_backend, game_state
from oracle_isolated import isolated_lc0_planes

POSITIONS = positions()
IDS = [name for name, _ in POSITIONS]
V2_FORMATS = (encoder.INPUT_CANONICAL_V2, encoder.INPUT_CANONICAL_V2_ARMAGEDDON)


@pytest.fixture(scope="session")
def net_for_format(maia_path, tmp_path_factory):
    """format -> a copy of maia whose network_format.input is that format
    (lc0 picks the encoding from the net file)."""
    root = tmp_path_factory.mktemp("formats")
    original = net_pb2.Net()
    original.ParseFromString(gzip.open(maia_path).read())
    cache = {}

    def get(input_format: int):
        if input_format == original.format.network_format.input:
            return maia_path
        if input_format not in cache:
            net = net_pb2.Net()
            net.CopyFrom(original)
            net.format.network_format.input = input_format
            path = root / f"maia-input{input_format}.pb.gz"
            path.write_bytes(gzip.compress(net.SerializeToString(), compresslevel=1))
            cache[input_format] = path
        return cache[input_format]

    return get


def lc0_v2_hangs(board: chess.Board) -> bool:
    """lc0 v0.32.1's canonical-v2 encoder loops when its history walk reaches
    the fill before the first position of a FEN game: no zeroing move, castling
    change or e.p. position since a FEN with rule-50 > 0 (see LC0-FACTS.md)."""
    root = board.root()
    if root.halfmove_clock == 0 or root == chess.Board():
        return False
    if board.halfmove_clock != root.halfmove_clock + len(board.move_stack):
        return False
    if root.ep_square is not None and board.move_stack:
        return False
    return board.clean_castling_rights() == root.clean_castling_rights()


def assert_planes_equal(ours, theirs, name):
    if not np.array_equal(ours, theirs):
        bad = np.flatnonzero((ours != theirs).any(axis=(1, 2)))
        pytest.fail(f"{name}: planes {bad.tolist()} differ from lc0")


def test_position_set_is_varied():
    boards = [b for _, b in POSITIONS]
    assert len(boards) >= 50
    assert any(b.turn == chess.BLACK for b in boards)
    assert any(b.is_repetition(3) for b in boards) and any(b.is_repetition(2) for b in boards)
    assert any(b.move_stack and b.move_stack[-1].promotion == chess.KNIGHT for b in boards)
    assert any(b.halfmove_clock >= 90 for b in boards)
    assert any(b.has_legal_en_passant() for b in boards)
    transforms = {encoder.board_transform(b, encoder.INPUT_CANONICAL) for b in boards}
    assert transforms == set(range(8))


@pytest.mark.parametrize("input_format", [1, 2, 3, 4, 132, 5, 133])
def test_planes_match_lc0(input_format, net_for_format):
    path = net_for_format(input_format)
    checked = [(n, b) for n, b in POSITIONS
               if not (input_format in V2_FORMATS and lc0_v2_hangs(b))]
    if input_format in V2_FORMATS:
        # Through a child process, so that a position lc0 loops on cannot hang the suite.
        references = isolated_lc0_planes(path, [b for _, b in checked], timeout=10)
    else:
        references = [lc0_planes(path, b) for _, b in checked]
    for (name, board), reference in zip(checked, references):
        assert reference is not None, f"{name}: lc0 hung or crashed"
        assert_planes_equal(encoder.encode(board, input_format), reference, name)
    assert len(checked) >= 50


@pytest.mark.parametrize("input_format", V2_FORMATS)
def test_canonical_v2_where_lc0_hangs(input_format, net_for_format):
    """Where lc0 v0.32.1 loops, our v2 planes are the current position plus its
    repetitions, stopping at the first position; everything else matches the
    v1 canonical format, which lc0 encodes fine."""
    hanging = [(n, b) for n, b in POSITIONS if lc0_v2_hangs(b)]
    assert len(hanging) >= 10
    # Prove the quirk on one position (in a child process: it hangs or crashes),
    # after a position lc0 answers, so a slow start cannot pass for a hang.
    answered, hung = isolated_lc0_planes(net_for_format(input_format),
                                         [chess.Board(), hanging[0][1]], timeout=5)
    assert answered is not None and hung is None
    v1_format = {5: 4, 133: 132}[input_format]
    v1_path = net_for_format(v1_format)
    for name, board in hanging:
        ours = encoder.encode(board, input_format)
        reference = lc0_planes(v1_path, board)
        assert_planes_equal(ours[:13], reference[:13], name)
        assert_planes_equal(ours[104:], reference[104:], name)
        written = [i for i in range(1, 8) if ours[13 * i:13 * i + 13].any()]
        assert all(ours[13 * i + 12].all() for i in written), name  # only repetitions


def lc0_masks_values(path, board):
    _, backend = oracle_backend(str(path))
    inp = game_state(board).as_input(backend)
    return (np.array([inp.mask(i) for i in range(112)], dtype=np.uint64),
            np.array([inp.val(i) for i in range(112)], dtype=np.float32))


@pytest.mark.parametrize("input_format", [1, 4, 132])
def test_packed_matches_lc0_masks_and_values(input_format, net_for_format):
    path = net_for_format(input_format)
    for name, board in POSITIONS:
        masks, values, transform = encoder.encode_packed(board, input_format)
        lc0_masks, lc0_values = lc0_masks_values(path, board)
        assert masks.dtype == np.uint64 and values.dtype == np.float32
        assert np.array_equal(masks, lc0_masks), name
        assert np.array_equal(values, lc0_values), name
        assert transform == encoder.board_transform(board, input_format)


def test_encode_batch_equals_single():
    boards = [b for _, b in POSITIONS[:20]]
    batch = encoder.encode_batch(boards, 3)
    assert batch.shape == (20, 112, 8, 8) and batch.dtype == np.float32
    for i, board in enumerate(boards):
        assert np.array_equal(batch[i], encoder.encode(board, 3))
    assert encoder.encode_batch([], 1).shape == (0, 112, 8, 8)


def test_encode_does_not_change_the_board():
    board = POSITIONS[-1][1]
    before = (board.fen(), list(board.move_stack))
    encoder.encode(board)
    encoder.policy_indices(board)
    assert (board.fen(), list(board.move_stack)) == before


def test_bad_input():
    with pytest.raises(ValueError, match="unsupported input format 7"):
        encoder.encode(chess.Board(), 7)
    with pytest.raises(TypeError, match="chess.Board"):
        encoder.encode("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")


def test_policy_indices_match_lc0():
    for name, board in POSITIONS:
        moves, indices = encoder.policy_indices(board)
        state = game_state(board)
        expected = dict(zip(state.moves(), state.policy_indices()))
        assert dict(zip([m.uci() for m in moves], indices.tolist())) == expected, name


def test_canonical_policy_indices_follow_the_planes():
    """Under a canonical transform, each legal move's from-square carries the
    moving piece in the transformed planes, and the index is the transformed
    move. This equals lc0 v0.32.1 for FLIP and MIRROR; for TRANSPOSE lc0
    v0.32.1 maps moves with a 180-degree turn, which disagrees with its own
    planes (LC0-FACTS.md), so there we follow the planes and differ from it."""
    seen = set()
    for name, board in POSITIONS:
        transform = encoder.board_transform(board, encoder.INPUT_CANONICAL)
        planes = encoder.encode(board, encoder.INPUT_CANONICAL)
        moves, indices = encoder.policy_indices(board, encoder.INPUT_CANONICAL)
        for move, index in zip(moves, indices):
            uci = tables.POLICY_MOVES[index]
            from_sq = chess.parse_square(uci[:2])
            piece = board.piece_type_at(move.from_square)
            assert planes[piece - 1].reshape(64)[from_sq] == 1, (name, move)
            to_sq = chess.parse_square(uci[2:4])
            target = board.piece_at(move.to_square)
            if target and target.color != board.turn:
                assert planes[6 + target.piece_type - 1].reshape(64)[to_sq] == 1, (name, move)
            if transform and not transform & encoder.TRANSPOSE:
                real = [move.from_square, move.to_square]
                if board.turn == chess.BLACK:
                    real = [s ^ 56 for s in real]
                lc0_from, lc0_to = (lc0_v0321_transform_square(s, transform) for s in real)
                assert (lc0_from, lc0_to) == (from_sq, to_sq), (name, move)
        seen.add(transform)
    assert {encoder.FLIP, encoder.TRANSPOSE, encoder.MIRROR | encoder.TRANSPOSE} <= seen


def test_policy_indices_castling_and_promotions():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1")
    moves, indices = encoder.policy_indices(board)
    by_uci = dict(zip([m.uci() for m in moves], indices.tolist()))
    # Black to move: ranks mirrored, castling as king-takes-rook.
    assert tables.POLICY_MOVES[by_uci["e8g8"]] == "e1h1"
    assert tables.POLICY_MOVES[by_uci["e8c8"]] == "e1a1"
    board = chess.Board("r3k2r/1P6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    moves, indices = encoder.policy_indices(board)
    by_uci = dict(zip([m.uci() for m in moves], indices.tolist()))
    assert tables.POLICY_MOVES[by_uci["b7a8q"]] == "b7a8q"
    assert tables.POLICY_MOVES[by_uci["b7a8n"]] == "b7a8"
    assert tables.POLICY_MOVES[by_uci["b7b8r"]] == "b7b8r"
    assert len(set(indices.tolist())) == len(indices)


def test_history_without_python_chess_internals(monkeypatch):
    """The encoder reads python-chess's private per-move states when present;
    without them it walks back on a copy. Both give the same planes."""
    fast = [encoder.encode_packed(b, f) for _, b in POSITIONS for f in (1, 5)]
    monkeypatch.delattr(chess, "_BoardState")
    slow = [encoder.encode_packed(b, f) for _, b in POSITIONS for f in (1, 5)]
    for (m1, v1, t1), (m2, v2, t2) in zip(fast, slow):
        assert np.array_equal(m1, m2) and np.array_equal(v1, v2) and t1 == t2


def chess960_games() -> list[chess.Board]:
    """Chess960 games that castle whenever they can (seeded)."""
    import random
    rng = random.Random(0)
    boards = []
    for start in (0, 100, 518, 959):
        board = chess.Board.from_chess960_pos(start)
        for _ in range(24):
            boards.append(board.copy())
            moves = list(board.legal_moves)
            castles = [m for m in moves if board.is_castling(m)]
            board.push(castles[0] if castles and rng.random() < 0.7 else rng.choice(moves))
    return boards


@pytest.mark.parametrize("input_format", [1, 2, 3])
def test_chess960_planes_match_lc0(input_format, net_for_format):
    path = net_for_format(input_format)
    boards = chess960_games()
    for board in boards:
        assert_planes_equal(encoder.encode(board, input_format), lc0_planes(path, board),
                            board.fen())


def test_chess960_policy_indices_match_lc0():
    """lc0 names some Chess960 castling moves differently (king-to-own-square
    "g1g1" where python-chess writes king-takes-rook "g1h1"), so compare the
    index sets; each position's indices must be distinct."""
    castled = 0
    for board in chess960_games():
        moves, indices = encoder.policy_indices(board)
        state = game_state(board)
        assert sorted(indices.tolist()) == sorted(state.policy_indices()), board.fen()
        castled += any(board.is_castling(m) for m in moves)
    assert castled >= 3  # positions where castling is legal
