"""The native search (native/core/src/search) against the Python reference
search (lc0_rocm/search/core.py): same trees, one thread, fixed nodes.

Smart pruning is off in the tree comparisons: past its 200 ms tolerance it
stops on measured nps, which differs between a fast and a slow search.
"""
from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time

import chess
import pytest

from lc0_rocm import native_core
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE = [line for line in (ROOT / "tests" / "data" / "suite.epd").read_text().splitlines() if line]
SAME_TREE = {"Threads": 1, "SmartPruningFactor": 0}
SMART_PRUNING_TOLERANCE_S = 0.2    # lc0's kSmartPruningToleranceMs

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")


@pytest.fixture(scope="module")
def random_net():
    return load_network(None, backend="random")


def _tree(result):
    return (result.best_move, result.nodes, sorted((m.uci(), s.visits, s.p) for m, s in result.stats.items()),
            [m.uci() for m in result.pv])


def _both(net, board, options=SAME_TREE, **limits):
    out = []
    for implementation in ("native", "reference"):
        engine = Engine(net, implementation=implementation, **options)
        out.append(_tree(engine.search(board, **limits)))
    return out


def test_engine_uses_the_native_search(random_net):
    assert Engine(random_net).implementation == "native"
    assert Engine(random_net, implementation="reference").implementation == "reference"
    with pytest.raises(ValueError):
        Engine(random_net, implementation="fast")


@pytest.mark.parametrize("start", range(0, 120, 30))
def test_same_trees_as_the_reference_on_the_suite(random_net, start):
    """Visit counts and priors of every root move, the node count, the
    best move and the principal variation equal the Python search's, on
    all 120 suite positions."""
    for line in SUITE[start:start + 30]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(random_net, board, nodes=200)
        assert native == reference, line


def test_same_trees_when_every_prior_is_equal():
    """A flat policy (random backend, uniform): every edge's prior ties, so
    the edges keep python-chess's move order and the search visits them in
    it; the trees equal the reference's."""
    flat = load_network(None, backend="random", backend_opts="uniform=true")
    for line in SUITE[:12]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(flat, board, nodes=150)
        assert native == reference, line
        assert len({p for _, _, p in native[2]}) == 1, "expected one prior for every move"


def test_same_trees_at_800_nodes(random_net):
    for line in SUITE[::40]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(random_net, board, nodes=800)
        assert native == reference, line


def test_same_trees_with_smart_pruning_hints(random_net):
    """With smart pruning on, the node limit's hints (root pruning near the
    limit) shape the tree. Past lc0's 200 ms tolerance the hints also follow
    the measured speed, so only searches that stayed under it must agree; a
    loaded machine gets a few tries."""
    board, _ = chess.Board.from_epd(SUITE[5])
    for _ in range(5):
        results = [Engine(random_net, implementation=impl, Threads=1).search(board, nodes=60)
                   for impl in ("native", "reference")]
        if all(r.time < SMART_PRUNING_TOLERANCE_S for r in results):
            assert _tree(results[0]) == _tree(results[1])
            return
    pytest.skip("every try ran past smart pruning's 200 ms tolerance (machine too loaded)")


def test_same_trees_with_two_threads_pipelined(random_net):
    """Threads 2: gathering the next batch while the network computes the
    current one, the same schedule as the reference's pipeline."""
    for line in SUITE[3::20]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(random_net, board, {"Threads": 2, "SmartPruningFactor": 0},
                                  nodes=400)
        assert native == reference, line


def test_strict_nodes_stop_at_the_node_limit_with_the_same_trees(random_net):
    """StrictNodes cuts the batch that would pass `go nodes`: the search
    ends at the limit (lc0's default stops only between batches, past it),
    with the same trees in both searches, also with a reused tree."""
    options = {**SAME_TREE, "MinibatchSize": 64, "MaxPrefetch": 0}
    overshoots = 0
    for line in SUITE[1::15]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(random_net, board, {**options, "StrictNodes": True}, nodes=100)
        assert native == reference, line
        assert native[1] == 100, line
        loose, _ = _both(random_net, board, options, nodes=100)
        overshoots += loose[1] > 100
    assert overshoots, "the default never passed the limit: the test proves nothing"
    engine = Engine(random_net, **options, StrictNodes=True)
    board = chess.Board()
    engine.search(board, nodes=100)
    board.push(engine.search(board, nodes=150).best_move)
    assert engine.search(board, nodes=300).nodes == 300     # the reused subtree's visits count


def test_strict_nodes_at_a_node_limit_of_0_still_visits_the_root():
    """nodes 0 through the core's ABI (Engine.search refuses it): the root's
    first visit is still taken, as without the option, where a gathering
    that ends empty at the limit would wait forever for a first playout."""
    code = """
import chess
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network
net = load_network(None, backend="random")
for threads in (1, 2):
    engine = Engine(net, Threads=threads, StrictNodes=True, SmartPruningFactor=0)
    native = engine._native
    native.set_params(engine.params, engine.minibatch_size(), engine.search_threads())
    native.run(chess.Board(), engine.params, nodes=0)
    print(native.snapshot(1).total_nodes)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["1", "1"], run.stdout


def test_strict_nodes_with_two_threads_pipelined(random_net):
    """A gathering that starts while the pipelined batch holds the last
    visits ends empty: the limit exactly, trees as the reference."""
    for line in SUITE[2::30]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(random_net, board, {"Threads": 2, "SmartPruningFactor": 0, "MinibatchSize": 32,
                                                      "MaxPrefetch": 0, "StrictNodes": True}, nodes=200)
        assert native == reference, line
        assert native[1] == 200, line


def test_same_trees_with_multipv_searchmoves_and_options(random_net):
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    options = {**SAME_TREE, "MultiPV": 3, "CPuct": 2.5, "FpuStrategy": "absolute",
               "PolicyTemperature": 1.0, "DrawScore": 0.1, "MaxPrefetch": 0}
    native, reference = _both(random_net, board, options, nodes=300)
    assert native == reference
    moves = [chess.Move.from_uci(u) for u in ("d2d4", "b1c3", "f1c4")]
    native, reference = _both(random_net, board, nodes=300, searchmoves=moves)
    assert native == reference
    assert native[0] in moves


def test_tree_reuse_between_moves_of_a_game(random_net):
    engines = {impl: Engine(random_net, implementation=impl, **SAME_TREE)
               for impl in ("native", "reference")}
    board = chess.Board()
    for _ in range(6):
        results = {impl: e.search(board, nodes=150) for impl, e in engines.items()}
        assert _tree(results["native"]) == _tree(results["reference"])
        assert results["native"].nodes >= 150
        board.push(results["native"].best_move)


def test_a_new_game_keeps_nothing_of_the_last_tree(random_net):
    """new_game keeps the tree's storage for the next one (analysis starts a
    game for every position) but nothing of its nodes: a search of the same
    position, or of one the last game's tree holds, grows the tree a fresh
    engine grows."""
    board = chess.Board()
    after = chess.Board()
    after.push_uci("e2e4")
    used = Engine(random_net, implementation="native", **SAME_TREE)
    for position in (board, after, board):
        used.search(position, nodes=400)
        used.new_game()
        fresh = Engine(random_net, implementation="native", **SAME_TREE)
        assert _tree(used.search(position, nodes=300)) == _tree(fresh.search(position, nodes=300))
        used.new_game()


def test_two_fold_draws_and_mates_in_the_tree(random_net):
    # A position where repetitions come up (rooks shuffling) and one with mates.
    for fen, moves in (("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", ["a1a2", "g8h8", "a2a1", "h8g8"]),
                       ("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", [])):
        board = chess.Board(fen)
        for u in moves:
            board.push_uci(u)
        native, reference = _both(random_net, board, nodes=400)
        assert native == reference


def test_same_trees_with_maia_on_cpu(maia_path):
    net = load_network(str(maia_path), backend="cpu")
    for line in SUITE[7::60]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(net, board, nodes=40)
        assert native == reference, line


def _stop_later(stop: threading.Event, after_s: float, fired: list) -> threading.Thread:
    def fire():
        time.sleep(after_s)
        fired.append(time.monotonic())
        stop.set()
    thread = threading.Thread(target=fire)
    thread.start()
    return thread


def test_stop_answers_at_once(random_net):
    engine = Engine(random_net, Threads=1)
    latencies = []
    for _ in range(5):
        stop, fired = threading.Event(), []
        thread = _stop_later(stop, 0.15, fired)
        result = engine.search(chess.Board(), stop=stop)
        latencies.append(time.monotonic() - fired[0])
        thread.join()
        assert result.best_move in chess.Board().legal_moves
        assert result.nodes > 0
    # 20 ms is the target; the bound leaves room for a loaded test machine.
    assert statistics.median(latencies) < 0.05, latencies


def test_stop_while_a_slow_batch_computes(random_net):
    """A stop that lands while the network computes is answered before the
    batch finishes (lc0 answers from its watchdog); the next search waits
    for that batch."""
    slow = load_network(None, backend="random", delay=300)
    engine = Engine(slow, Threads=1, MinibatchSize=8)
    stop, fired = threading.Event(), []
    thread = _stop_later(stop, 0.45, fired)     # during the second batch
    result = engine.search(chess.Board(), stop=stop)
    assert time.monotonic() - fired[0] < 0.15       # the batch takes 0.3 s
    thread.join()
    assert result.best_move in chess.Board().legal_moves
    again = engine.search(chess.Board(), nodes=5)
    assert again.best_move in chess.Board().legal_moves


def test_info_lines_come_from_the_native_search(random_net):
    seen = []
    result = Engine(random_net, MultiPV=2).search(chess.Board(), nodes=300, on_info=seen.append)
    assert [line.multipv for line in seen[-2:]] == [1, 2]
    assert seen[-2].pv[0] == result.best_move and seen[-2].nodes == result.nodes
    board = chess.Board()
    for move in seen[-2].pv:
        assert move in board.legal_moves
        board.push(move)


def test_errors_of_the_network_reach_the_caller():
    class Broken:
        input_format = 1
        has_moves_left = False
        backend = "cpu"

        def forward_packed(self, masks, values):
            raise RuntimeError("the GPU fell off")

    engine = Engine(Broken())
    assert engine.implementation == "native"
    with pytest.raises(RuntimeError, match="fell off"):
        engine.search(chess.Board(), nodes=10)
    with pytest.raises(RuntimeError, match="fell off"):       # and again: the handle still works
        engine.search(chess.Board(), nodes=10)


def test_uci_fuzz_through_the_native_search(tmp_path, monkeypatch, maia_path):
    """The UCI fuzz stream (tests/test_uci_fuzz.py) against the real Engine
    on the native search (random backend, work capped): no exception, no
    internal error, every output one printable line, still playing after."""
    import random

    from lc0_rocm import uci
    from tests.test_uci_fuzz import check_output, random_line
    from tests.uci_fakes import Collector

    class CappedEngine(Engine):
        def search(self, board, *, nodes=None, movetime=None, infinite=False, **kwargs):
            assert self.implementation == "native"
            if not infinite:
                nodes = min(nodes or 50, 50)
                movetime = None if movetime is None else min(movetime, 0.01)
            return super().search(board, nodes=nodes, movetime=movetime, infinite=infinite, **kwargs)

    monkeypatch.chdir(tmp_path)
    rng = random.Random(20261122)
    out = Collector()
    setup = ["setoption name Backend value random", f"setoption name WeightsFile value {maia_path}"]

    def fresh():
        engine = uci.UciEngine(out, engine_class=CappedEngine, cwd=tmp_path)
        for line in setup:
            engine.handle(line)
        return engine

    engine = fresh()
    for _ in range(1500):
        line = random_line(rng)
        if "Backend" in line or "WeightsFile" in line:
            continue                       # keep the cheap random net
        if not engine.handle(line):
            engine = fresh()
        if len(out.lines) > 2000:
            check_output(out.take())
    engine.handle("stop")
    check_output(out.take())
    for command in ("ucinewgame", "setoption name MultiPV value 1", "position startpos moves e2e4",
                    "isready"):
        engine.handle(command)
    out.wait_for("readyok")
    engine.handle("go nodes 30")
    best = out.wait_for("bestmove").split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves
    engine.handle("quit")


def test_tablebase_probes_from_the_native_tree(random_net):
    """Syzygy probes from the tree go through the python-chess prober's
    callback; the tree equals the reference's and the TB win is reported."""
    from tests.test_search import FakeTablebase

    board = chess.Board("8/1r6/8/8/8/6k1/1Q6/K7 w - - 0 1")
    out = []
    for implementation in ("native", "reference"):
        engine = Engine(random_net, implementation=implementation, **SAME_TREE)
        tb = FakeTablebase()
        engine.set_tablebase(tb)
        result = engine.search(board, nodes=300)
        assert tb.probes > 0 and result.lines[0].tbhits > 0
        out.append((_tree(result), result.lines[0].tbhits, result.lines[0].mate))
    assert out[0] == out[1]
    assert out[0][2] is not None and out[0][2] > 100


def test_same_trees_with_a_moves_left_head_and_contempt(make_test_net):
    """The moves-left utility (MovesLeft* knobs) and contempt's WDL rescaling
    of fresh values, on a tiny generated net with a moves-left head."""
    net = load_network(str(make_test_net("tiny-resnet")), backend="cpu")
    assert net.has_moves_left
    for options in ({"MovesLeftThreshold": 0.0, "MovesLeftMaxEffect": 0.2},
                    {"MovesLeftThreshold": 0.3, "Contempt": "150", "WDLDrawRateTarget": 0.4}):
        for line in SUITE[11::50]:
            board, _ = chess.Board.from_epd(line)
            native, reference = _both(net, board, {**SAME_TREE, **options}, nodes=150)
            assert native == reference, (options, line)


@pytest.mark.parametrize("input_format", [2, 3, 4, 132, 5, 133])
def test_same_trees_for_every_input_format(input_format):
    net = load_network(None, backend="random", input_mode=input_format)
    for line in SUITE[2::30]:
        board, _ = chess.Board.from_epd(line)
        native, reference = _both(net, board, nodes=150)
        assert native == reference, line


def test_same_trees_in_chess960(random_net):
    board = chess.Board.from_chess960_pos(518 - 137)
    for uci in ("b2b3", "g7g6", "c1b2", "h8g7"):
        move = chess.Move.from_uci(uci)
        if move in board.legal_moves:
            board.push(move)
    native, reference = _both(random_net, board, nodes=300)
    assert native == reference
    castles = [m for m in board.legal_moves if board.is_castling(m)]
    result = Engine(random_net, **SAME_TREE).search(board, nodes=50, searchmoves=castles or None)
    assert result.best_move in board.legal_moves


FUZZ_SCRIPT = r"""
import random, sys
from lc0_rocm import native_core
ffi, lib = native_core.load()
rng = random.Random(int(sys.argv[1]))
out = ffi.new("lc0core_search**")
assert lib.lc0core_search_create(out) == 0
h = out[0]
ev = ffi.new("lc0core_evaluator*")
ev.forward = ffi.addressof(lib, "lc0core_random_forward")
ctx = ffi.new("lc0core_random_net*")
ev.ctx, ev.input_format = ctx, 1
assert lib.lc0core_search_set_evaluator(h, ev) == 0
words = [b"e2e4", b"e7e5", b"e1g1", b"0000", b"zz", b"a7a8q", b"\xff\xfe", b""]
fens = [b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", b"8/8/8/8/8/8/8/8 w - - 0 1",
        b"garbage", b"7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", bytes(rng.randrange(256) for _ in range(40))]
names = [b"CPuct", b"MinibatchSize", b"Threads", b"NNCacheSize", b"Nope", b"\x00", b"MaxPrefetch"]
limits = ffi.new("lc0core_search_limits*")
buf = ffi.new("char[]", 64)
edges = ffi.new("lc0core_root_edge[]", 4)
n = ffi.new("int*")
stats = ffi.new("lc0core_search_stats*")
for _ in range(400):
    op = rng.randrange(6)
    if op == 0:
        lib.lc0core_search_set_option(h, rng.choice(names), rng.choice([0, 1, 2, -5, 1e12, float("nan"), 3.5]))
    elif op == 1:
        lib.lc0core_search_set_position(h, rng.choice(fens), b" ".join(rng.choice(words) for _ in range(rng.randrange(4))), rng.randrange(2))
    elif op == 2:
        limits.nodes, limits.movetime, limits.infinite = rng.choice([1, 5, 50, -1]), 0.01, 0
        limits.depth, limits.mate, limits.time_budget = -1, -1, -1
        limits.rescale_ratio = 1.0
        # The buffer kept alive for the call (a struct field does not own it).
        searchmoves = ffi.NULL if rng.random() < 0.7 else ffi.new("char[]", rng.choice(words))
        limits.searchmoves = searchmoves
        if lib.lc0core_search_start(h, limits, ffi.NULL, ffi.NULL, 0.1) == 0:
            f = ffi.new("int*")
            while lib.lc0core_search_wait(h, 0.01, f) == 0 and not f[0]:
                pass
    elif op == 3:
        lib.lc0core_search_pv(h, rng.randrange(-3, 40), buf, rng.choice([0, 1, 8, 64]))
    elif op == 4:
        lib.lc0core_search_root_edges(h, edges, rng.choice([-1, 0, 4]), n)
        lib.lc0core_search_best_edges(h, rng.choice([-1, 0, 3]), ffi.new("int[]", 3), n)
    else:
        lib.lc0core_search_get_stats(h, stats)
        lib.lc0core_search_new_game(h) if rng.random() < 0.1 else lib.lc0core_search_stop(h)
lib.lc0core_search_destroy(h)
print("survived")
"""


def test_abi_survives_garbage(tmp_path):
    """Random calls with bad names, FENs, moves, indices and buffers: status
    codes, never a crash (in a child process, so a crash fails the test)."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for seed in (1, 2):
        done = subprocess.run([sys.executable, "-c", FUZZ_SCRIPT, str(seed)], capture_output=True,
                              text=True, timeout=120, env=env)
        assert done.returncode == 0 and "survived" in done.stdout, done.stderr[-2000:]


def test_pipelined_search_calls_the_network_one_batch_at_a_time():
    """Threads=2 overlaps gathering with the network, never two network calls:
    a GPU stream and its buffers serve one call at a time (two at once gave
    'forward call failed' on the device)."""
    from lc0_rocm.backends.random import create as create_random

    random_net = create_random("random", None)
    busy = threading.Lock()
    overlaps = []
    calls = []

    class OneAtATime:
        input_format = 1
        has_moves_left = False
        backend = "cuda-fp16"   # a GPU name: the engine pipelines with Threads=2

        def forward_packed(self, masks, values):
            if not busy.acquire(blocking=False):
                overlaps.append(len(masks))
                busy.acquire()
            try:
                calls.append(len(masks))
                time.sleep(0.002)   # long enough for a second call to arrive
                return random_net.forward_packed(masks, values)
            finally:
                busy.release()

    engine = Engine(OneAtATime(), implementation="native", Threads=2, MinibatchSize=16)
    result = engine.search(chess.Board(), nodes=600)
    assert result.best_move in chess.Board().legal_moves
    assert len(calls) > 5 and not overlaps, (len(calls), overlaps)


def test_close_needs_no_cffi_lock():
    """__del__ -> close() may run from the garbage collector inside a cffi
    call that holds the ffi's lock (this hung the test suite once): close()
    must not need that lock."""
    from lc0_rocm.search.native import NativeSearch

    search = NativeSearch(load_network(None, backend="random"))
    with search.ffi._lock:                 # as inside ffi.new() when the GC ran
        closer = threading.Thread(target=search.close, daemon=True)
        closer.start()
        closer.join(5)
        assert not closer.is_alive(), "close() waited for the ffi's lock"


@pytest.mark.parametrize("start", range(0, 120, 40))
def test_task_workers_pick_the_same_trees(random_net, start):
    """lc0's task workers pick separate branches at once; their results are
    appended in edge order, so the tree equals one thread picking alone."""
    used = 0
    for line in SUITE[start:start + 40:4]:
        board, _ = chess.Board.from_epd(line)
        trees = []
        for workers in (0, 3):
            engine = Engine(random_net, implementation="native", TaskWorkers=workers,
                            MinimumPickingWork=1, MinimumRemainingPickingWork=4, MinibatchSize=64, **SAME_TREE)
            trees.append(_tree(engine.search(board, nodes=1500)))
            used += engine._native.run_stats()["picking_tasks"] if workers else 0
        assert trees[0] == trees[1], line
    assert used > 50, used


_PICKING_TASKS = """
import os, sys, chess
if len(sys.argv) > 1:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network
engine = Engine(load_network(None, backend="random"), implementation="native", MinimumPickingWork=1,
                MinimumRemainingPickingWork=4, MinibatchSize=64, **{"Threads": 1, "SmartPruningFactor": 0})
engine.search(chess.Board(), nodes=3000)
print(engine._native.run_stats()["picking_tasks"])
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs an affinity call and at least two cores to take one away")
def test_task_workers_follow_the_cores_the_process_may_use():
    """TaskWorkers -1 counts the process's cores (its affinity), not the
    host's: one search thread gets cores - 1 task workers, so a process
    held to one core picks alone where an unrestricted one hands branches
    to a worker."""
    def picking_tasks(*pinned):
        done = subprocess.run([sys.executable, "-c", _PICKING_TASKS, *pinned], capture_output=True,
                              text=True, timeout=120, cwd=pathlib.Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])
    assert picking_tasks() > 0
    assert picking_tasks("one core") == 0


def test_task_workers_with_search_workers_stay_sound(random_net):
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4")
    engine = Engine(random_net, implementation="native", Threads=2, TaskWorkers=2, MinibatchSize=64)
    result = engine.search(board, nodes=20000)
    assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
    assert result.best_move in board.legal_moves


@pytest.mark.parametrize("start", range(0, 120, 60))
def test_solid_children_grow_the_same_trees(random_net, start):
    """lc0's solid children (a busy node's children moved into one block)
    change where nodes live, not what is searched: the same trees with every
    node made solid at its first visit as with none, also after tree reuse,
    and the moved tree stays sound."""
    for line in SUITE[start:start + 60:6]:
        board, _ = chess.Board.from_epd(line)
        trees, allocated = [], []
        for threshold in (1, 2000000000):
            engine = Engine(random_net, implementation="native", SolidTreeThreshold=threshold,
                            MinibatchSize=32, **SAME_TREE)
            grown = [_tree(engine.search(board, nodes=nodes)) for nodes in (700, 1500)]
            assert engine._native.tree_fault() == ""
            trees.append(grown)
            allocated.append(engine._native.run_stats()["tree_nodes"])
        assert trees[0] == trees[1], line
        assert allocated[0] > allocated[1], "no node was made solid"   # a slot per edge
