"""Several evaluator slots: Threads workers of the native search, each with a
slot of its own (a GPU stream, a GPU, a demux), so several batches are at
the network at once; and the core's demux forward (lc0's demux in C).

The slots here are cffi callbacks around the core's random net, so the
worker mode runs without a GPU: each call sleeps a little (releasing the
GIL) so that calls on different slots overlap when the search allows it.
"""
from __future__ import annotations

import gc
import pathlib
import threading
import time

import chess
import numpy as np
import pytest

from lc0_rocm import native_core
from lc0_rocm.backends.base import BackendAttributes
from lc0_rocm.engine import Engine
from lc0_rocm.search.native import NativeSearchError
from native_slot_fakes import CoreRandomSlots

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")

POLICY = 1858
# The workers' tests run every search thread from the first visit (by
# default one gathers until the root has ParallelSearchMinimumVisits).
EVERY_THREAD = {"ParallelSearchMinimumVisits": 0}


class SlotNet(CoreRandomSlots):
    """A network whose backend hands out native slots: callbacks that run the
    core's random net and record how calls overlap, per slot and in all."""

    input_format = 1
    has_moves_left = False

    def __init__(self, fail_after: int | None = None, delay_s: float = 0.001):
        super().__init__(seed=7, uniform=0)
        self.delay_s = delay_s
        self.fail_after = fail_after
        self.lock = threading.Lock()
        self.active: dict[int, int] = {}
        self.calls: dict[int, int] = {}
        self.same_slot_overlaps = 0
        self.most_at_once = 0
        self.backend = self

    name = "fake-gpu"
    device_info = {"multiprocessors": 4}

    def attributes(self):            # a GPU's: three search threads
        return BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=3,
                                 recommended_batch_size=8, maximum_batch_size=1024)

    def _forward(self, ctx, n, masks, values, policy, wdl, moves_left):
        slot = int(self.ffi.cast("uintptr_t", ctx))
        with self.lock:
            if self.active.get(slot):
                self.same_slot_overlaps += 1
            self.active[slot] = self.active.get(slot, 0) + 1
            self.most_at_once = max(self.most_at_once, sum(self.active.values()))
            self.calls[slot] = self.calls.get(slot, 0) + 1
            failing = self.fail_after is not None and sum(self.calls.values()) > self.fail_after
        try:
            time.sleep(self.delay_s)
            if failing:
                return 3
            return self.run_random(n, masks, values, policy, wdl, moves_left)
        finally:
            with self.lock:
                self.active[slot] -= 1

    def forward_packed(self, masks, values):
        raise AssertionError("the native search must use the slots")


def test_threads_use_a_slot_each_with_batches_in_flight_together():
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD, MinibatchSize=16, SmartPruningFactor=0)
    result = engine.search(chess.Board(), nodes=3000)
    assert result.best_move in chess.Board().legal_moves
    assert result.nodes >= 3000
    assert len(net.calls) == 3 and min(net.calls.values()) > 3, net.calls
    assert net.same_slot_overlaps == 0
    assert net.most_at_once >= 2          # several batches at the network at once
    # Every visit came back: the root's visits are its children's plus one.
    assert sum(s.visits for s in result.stats.values()) == result.nodes - 1


def test_a_small_tree_is_grown_by_one_thread_as_with_threads_1():
    """Below ParallelSearchMinimumVisits (2000 by default) one worker
    gathers: the tree is Threads 1's, visit for visit, on the first slot."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    trees = []
    for threads in (3, 1):
        net = SlotNet()
        result = Engine(net, implementation="native", Threads=threads, MinibatchSize=16,
                        SmartPruningFactor=0).search(board, nodes=800)
        trees.append({move: (s.visits, round(s.q, 12)) for move, s in result.stats.items()})
        assert list(net.calls) == [1], net.calls
    assert trees[0] == trees[1]


def test_past_parallel_search_minimum_visits_every_worker_gathers():
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=3, ParallelSearchMinimumVisits=600,
                    MinibatchSize=16, SmartPruningFactor=0)
    result = engine.search(chess.Board(), nodes=3000)
    assert len(net.calls) == 3 and min(net.calls.values()) > 3, net.calls
    assert sum(s.visits for s in result.stats.values()) == result.nodes - 1


def test_gatherings_ended_short_are_counted_by_why():
    """The profile's counters of gatherings that ended before a full
    minibatch: the collision budget (lc0's collisions_left) spent, at any
    thread count; the network idle (threads gathering, none at the
    network), only with threads and only past IdlingMinimumWork."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    counts = {}
    for threads, idling in ((1, 0), (3, 0), (3, 1000)):
        engine = Engine(SlotNet(), implementation="native", Threads=threads, **EVERY_THREAD, MinibatchSize=64,
                        IdlingMinimumWork=idling, SmartPruningFactor=0)
        engine.search(board, nodes=3000)
        stats = engine._native.run_stats()
        counts[threads, idling] = (stats["collision_ends"], stats["idle_ends"])
    assert counts[1, 0][0] > 0 and counts[1, 0][1] == 0, counts
    assert counts[3, 0][1] > 0, counts
    assert counts[3, 1000][1] == 0, counts       # never more than 1000 requests in a batch of 64


def test_time_waiting_for_the_tree_mutex_is_counted_for_search_threads():
    """The profile's tree_wait_s: search threads on slots add up their waits
    for the tree mutex (eight threads backing up and checking in beside each
    other on this machine's cores always wait some); one thread never waits."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    waits = {}
    for threads in (1, 8):
        engine = Engine(SlotNet(), implementation="native", Threads=threads, **EVERY_THREAD, MaxBatchesInFlight=8,
                        MinibatchSize=32, SmartPruningFactor=0)
        started = time.perf_counter()
        engine.search(board, nodes=6000)
        wall = time.perf_counter() - started
        waits[threads] = engine._native.run_stats()["tree_wait_s"]
        assert waits[threads] <= threads * wall, (waits, wall)
    assert waits[1] == 0.0 and waits[8] > 0.0, waits


def test_out_of_order_results_wait_for_their_batch_while_the_tree_mutex_is_busy():
    """Threads gathering side by side back a pick's cache hits and terminals
    up at once only when the tree mutex is free; else those visits stay in
    the batch and are backed up with it. Eight threads in a rook endgame
    (transpositions: cache hits) leave some, and every visit still lands:
    the tree is sound and the root's visits add up. One gatherer (below
    ParallelSearchMinimumVisits) always waits for the mutex, as Threads 1's
    trees need."""
    board = chess.Board("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 11")
    left = {}
    for minimum in (0, 10**6):
        engine = Engine(SlotNet(), implementation="native", Threads=8, MaxBatchesInFlight=8, MinibatchSize=32,
                        ParallelSearchMinimumVisits=minimum, SmartPruningFactor=0)
        result = engine.search(board, nodes=8000)
        left[minimum] = engine._native.run_stats()["ooo_left_in_batch"]
        assert engine._native.tree_fault() == ""
        assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
    assert left[0] > 0 and left[10**6] == 0, left


def test_the_automatic_idle_threshold_keeps_gathering_while_two_threads_are_at_the_network():
    """ThreadIdlingThreshold -1 (the default) is the gathering threads less
    2: with 8 threads a gathering ends early only when fewer than two are
    at the network, where lc0's 1 ends it when fewer than seven are (nearly
    always). A literal -1 would end every gathering after its first pick."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    share = {}
    for threshold in (1, -1):
        engine = Engine(SlotNet(delay_s=0.002), implementation="native", Threads=8, **EVERY_THREAD,
                        MaxBatchesInFlight=8, MinibatchSize=64, ThreadIdlingThreshold=threshold,
                        SmartPruningFactor=0)
        engine.search(board, nodes=4000)
        stats = engine._native.run_stats()
        share[threshold] = stats["idle_ends"] / max(1, stats["batches"])
    assert share[-1] < share[1] / 2, share      # measured here: ~0.2 against ~0.75


def test_strict_nodes_with_search_threads_on_slots():
    """StrictNodes with workers on slots of their own: a small tree, which
    one thread gathers, ends at the limit exactly; threads gathering side by
    side take a share each of what is left (at least one: a visit or two
    over when they start at the same moment); without the option the last
    batches pass the limit by more."""
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    options = dict(implementation="native", Threads=3, MaxBatchesInFlight=3, MinibatchSize=64, SmartPruningFactor=0)
    assert Engine(SlotNet(), **options, StrictNodes=True).search(board, nodes=1000).nodes == 1000
    limits = (3000, 4321, 5555)
    strict = [Engine(SlotNet(), **options, **EVERY_THREAD, StrictNodes=True).search(board, nodes=n).nodes
              for n in limits]
    loose = [Engine(SlotNet(), **options, **EVERY_THREAD).search(board, nodes=n).nodes for n in limits]
    assert all(n <= got <= n + 2 for n, got in zip(limits, strict)), strict
    assert any(got > n + 2 for n, got in zip(limits, loose)), loose


def test_one_thread_uses_only_the_first_slot():
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=1, MinibatchSize=16)
    engine.search(chess.Board(), nodes=400)
    assert list(net.calls) == [1]


def test_workers_search_the_same_position_sensibly():
    """A mate in one found with workers as with one thread."""
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    engine = Engine(SlotNet(), implementation="native", Threads=4, **EVERY_THREAD, MinibatchSize=8)
    result = engine.search(board, nodes=2000)
    assert result.best_move == chess.Move.from_uci("a1a8")


def test_stop_ends_every_worker_quickly():
    net = SlotNet(delay_s=0.002)
    engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD, MinibatchSize=16)
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    started = time.monotonic()
    result = engine.search(chess.Board(), infinite=True, stop=stop)
    assert time.monotonic() - started < 0.3 + 0.5
    assert result.best_move in chess.Board().legal_moves


def test_a_failing_slot_fails_the_search_and_the_engine_goes_on():
    net = SlotNet(fail_after=6)
    engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD, MinibatchSize=16)
    with pytest.raises(NativeSearchError, match="forward call failed"):
        engine.search(chess.Board(), nodes=5000)
    net.fail_after = None
    result = engine.search(chess.Board(), nodes=500)
    assert result.best_move in chess.Board().legal_moves


# ---------------------------------------------------------------- demux

def _random_outputs(lib, ffi, ctx, masks, values, forward=None):
    n = len(masks)
    policy = np.full((n, POLICY), np.nan, np.float32)
    wdl = np.full((n, 3), np.nan, np.float32)
    ml = np.full(n, np.nan, np.float32)
    fn = forward or lib.lc0core_random_forward
    status = fn(ctx, n, ffi.cast("uint64_t*", masks.ctypes.data), ffi.cast("float*", values.ctypes.data),
                ffi.cast("float*", policy.ctypes.data), ffi.cast("float*", wdl.ctypes.data),
                ffi.cast("float*", ml.ctypes.data))
    return status, policy, wdl, ml


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    masks = rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64)
    values = rng.random((n, 112), dtype=np.float32)
    return masks, values


@pytest.mark.parametrize("n, count, max_batch, minimum_split", [
    (1, 2, 0, 0), (7, 2, 0, 0), (64, 3, 5, 0), (100, 4, 0, 40), (256, 16, 7, 0)])
def test_demux_forward_equals_one_forward(n, count, max_batch, minimum_split):
    ffi, lib = native_core.load()
    random = ffi.new("lc0core_random_net*")
    random.seed = 3
    seen = []

    @ffi.callback("lc0core_forward_fn")
    def part(ctx, k, masks, values, policy, wdl, moves_left):
        seen.append((int(ffi.cast("uintptr_t", ctx)), k))
        return lib.lc0core_random_forward(random, k, masks, values, policy, wdl, moves_left)

    demux = ffi.new("lc0core_demux*")
    demux.count, demux.minimum_split = count, minimum_split
    for i in range(count):
        demux.forward[i], demux.ctx[i], demux.max_batch[i] = part, ffi.cast("void*", i + 1), max_batch
    masks, values = _inputs(n)
    want = _random_outputs(lib, ffi, random, masks, values)
    got = _random_outputs(lib, ffi, demux, masks, values, lib.lc0core_demux_forward)
    assert got[0] == 0 and want[0] == 0
    for a, b in zip(got[1:], want[1:]):
        assert np.array_equal(a, b)
    assert sum(k for _, k in seen) == n
    if max_batch:
        assert max(k for _, k in seen) <= max_batch
    size = max(-(-n // count), min(n, minimum_split))
    assert len({c for c, _ in seen}) == -(-n // size)


def test_demux_forward_turns_its_start_and_reports_a_failing_part():
    ffi, lib = native_core.load()
    random = ffi.new("lc0core_random_net*")
    seen = []

    @ffi.callback("lc0core_forward_fn")
    def part(ctx, k, masks, values, policy, wdl, moves_left):
        seen.append(int(ffi.cast("uintptr_t", ctx)))
        if int(ffi.cast("uintptr_t", ctx)) == 2 and k == 99:
            return 5
        return lib.lc0core_random_forward(random, k, masks, values, policy, wdl, moves_left)

    demux = ffi.new("lc0core_demux*")
    demux.count = 2
    for i in range(2):
        demux.forward[i], demux.ctx[i] = part, ffi.cast("void*", i + 1)
    masks, values = _inputs(1)
    for _ in range(4):
        assert _random_outputs(lib, ffi, demux, masks, values, lib.lc0core_demux_forward)[0] == 0
    assert seen == [1, 2, 1, 2]           # a one-position batch goes to each child in turn
    demux.start = 1
    masks, values = _inputs(198)
    assert _random_outputs(lib, ffi, demux, masks, values, lib.lc0core_demux_forward)[0] == 5
    demux.count = 0
    assert _random_outputs(lib, ffi, demux, masks, values, lib.lc0core_demux_forward)[0] != 0
    assert "1..16" in native_core.last_error()


def test_add_slot_checks_its_arguments():
    ffi, lib = native_core.load()
    out = ffi.new("lc0core_search**")
    assert lib.lc0core_search_create(out) == 0
    try:
        random = ffi.new("lc0core_random_net*")
        fn = ffi.addressof(lib, "lc0core_random_forward")
        assert lib.lc0core_search_add_slot(out[0], fn, random, 0) != 0      # no evaluator yet
        assert "evaluator" in native_core.last_error()
        ev = ffi.new("lc0core_evaluator*")
        ev.forward, ev.ctx, ev.input_format = fn, random, 1
        assert lib.lc0core_search_set_evaluator(out[0], ev) == 0
        assert lib.lc0core_search_add_slot(out[0], ffi.NULL, random, 0) != 0
        assert lib.lc0core_search_add_slot(out[0], fn, random, -1) != 0
        assert lib.lc0core_search_add_slot(out[0], fn, random, 0) == 0
    finally:
        lib.lc0core_search_destroy(out[0])


def _search_edges(lib, ffi, ev, nodes=400, memo=None, moves=b""):
    """A search with evaluator `ev` (and shared answers `memo`) from the
    start position: its root edges' (move, visits, q)."""
    out = ffi.new("lc0core_search**")
    assert lib.lc0core_search_create(out) == 0
    h = out[0]
    try:
        assert lib.lc0core_search_set_option(h, b"SmartPruningFactor", 0) == 0
        assert lib.lc0core_search_set_evaluator(h, ev) == 0
        if memo is not None:
            assert lib.lc0core_search_set_memo(h, memo) == 0
        assert lib.lc0core_search_set_position(h, b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
                                               moves, 0) == 0
        limits = ffi.new("lc0core_search_limits*")
        limits.nodes, limits.movetime, limits.time_budget, limits.depth, limits.mate = nodes, -1.0, -1.0, -1, -1
        limits.rescale_ratio = 1.0
        assert lib.lc0core_search_run(h, limits) == 0
        edges, count = ffi.new("lc0core_root_edge[]", 64), ffi.new("int*")
        assert lib.lc0core_search_root_edges(h, edges, 64, count) == 0
        return [(ffi.string(edges[k].uci), edges[k].visits, edges[k].wl) for k in range(count[0])]
    finally:
        lib.lc0core_search_destroy(h)


def test_an_evaluator_with_a_wanted_logits_forward_uses_it():
    """lc0core_evaluator.forward_wanted, when set, is called instead of
    forward with each row's legal-move policy indices; writing only those
    logits gives the same tree. Unset, forward alone is called."""
    ffi, lib = native_core.load()
    random = ffi.new("lc0core_random_net*", {"seed": 4, "uniform": 0})
    forward = ffi.addressof(lib, "lc0core_random_forward")
    calls = {"wanted": 0, "rows_wanted": 0}

    @ffi.callback("int(void*, int, const uint64_t*, const float*, const int*, const int*, float*, float*, float*)")
    def wanted_forward(ctx, n, masks, values, wanted, offsets, policy, wdl, moves_left):
        calls["wanted"] += 1
        full = ffi.new("float[]", 1858 * n)
        status = forward(ctx, n, masks, values, full, wdl, moves_left)
        for i in range(n):
            for k in range(offsets[i], offsets[i + 1]):
                policy[1858 * i + wanted[k]] = full[1858 * i + wanted[k]]
                calls["rows_wanted"] += 1
        return status

    ev = ffi.new("lc0core_evaluator*")
    ev.forward, ev.ctx, ev.input_format = forward, random, 1
    plain = _search_edges(lib, ffi, ev)
    assert calls["wanted"] == 0
    ev.forward_wanted = wanted_forward
    assert _search_edges(lib, ffi, ev) == plain
    assert calls["wanted"] > 0 and calls["rows_wanted"] > 20
    # Shared answers, with and without the wanted-logits forward: the search
    # from the start finds the answers under 1. e4 that the search after it
    # left (the rest of such a batch goes to the network alone), and its
    # tree is the one it has without them.
    for wanted in (ffi.NULL, wanted_forward):
        ev.forward_wanted = wanted
        memo = ffi.new("lc0core_eval_memo**")
        assert lib.lc0core_eval_memo_create(1 << 12, memo) == 0
        try:
            after_e4 = _search_edges(lib, ffi, ev, nodes=300, memo=memo[0], moves=b"e2e4")
            assert after_e4 == _search_edges(lib, ffi, ev, nodes=300, moves=b"e2e4")
            assert _search_edges(lib, ffi, ev, nodes=600, memo=memo[0]) == _search_edges(lib, ffi, ev, nodes=600)
            stats = ffi.new("lc0core_eval_memo_stats*")
            assert lib.lc0core_eval_memo_get_stats(memo[0], stats) == 0
            assert 0 < stats.hits < stats.lookups
        finally:
            lib.lc0core_eval_memo_destroy(memo[0])


# ---------------------------------------------------------------- GPU (skipped without one)

@pytest.mark.gpu
def test_gpu_workers_each_on_a_stream_of_their_own(maia_path):
    """On a GPU: Threads 3 runs three streams at once; the search is sound
    (a forced mate found, every visit backed up) and one thread still gives
    the reference's tree."""
    from lc0_rocm.network import load_network
    from tests.gpu_paths import gpu_backend_or_skip

    net = load_network(maia_path, backend=gpu_backend_or_skip("fp16"))
    try:
        engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD)
        result = engine.search(chess.Board(), nodes=20000)
        assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
        assert engine._native._slots_used == 3
        mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
        assert engine.search(mate, nodes=3000).best_move == chess.Move.from_uci("a1a8")
        trees = []
        for implementation in ("native", "reference"):
            e = Engine(net, implementation=implementation, Threads=1, SmartPruningFactor=0)
            r = e.search(chess.Board(), nodes=300)
            trees.append(sorted((m.uci(), s.visits) for m, s in r.stats.items()))
        assert trees[0] == trees[1]
    finally:
        net.close()


def test_changing_threads_between_searches_changes_the_slots_in_use():
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD, MinibatchSize=16)
    engine.search(chess.Board(), nodes=1500)
    assert engine._native._slots_used == 3 and len(net.calls) == 3
    engine.set_option("Threads", 1)
    engine.new_game()                       # no tree reuse: the search runs anew
    before = dict(net.calls)
    engine.search(chess.Board(), nodes=1500)
    assert engine._native._slots_used == 1
    assert {k: v - before.get(k, 0) for k, v in net.calls.items() if v != before.get(k, 0)}.keys() == {1}
    engine.set_option("Threads", 2)
    engine.new_game()
    engine.search(chess.Board(), nodes=1500)
    assert engine._native._slots_used == 2 and len(net.callbacks) == 3   # streams are kept, not taken again


@pytest.mark.parametrize("fen", [chess.STARTING_FEN,
                                 "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
                                 "8/8/4k3/8/2K5/8/3P4/8 w - - 0 1"])
def test_workers_expanding_leaves_unlocked_leave_a_sound_tree(fen):
    """Workers pick under the tree lock and expand their leaves without it,
    split over task workers; afterwards every link and count adds up."""
    engine = Engine(SlotNet(delay_s=0.0005), implementation="native", Threads=3, **EVERY_THREAD, TaskWorkers=2,
                    MinimumProcessingWork=2, MinimumPerTaskProcessing=1, MinibatchSize=32,
                    SmartPruningFactor=0)
    board = chess.Board(fen)
    for nodes in (2500, 5000):                 # the second run reuses the tree
        result = engine.search(board, nodes=nodes)
        assert engine._native.tree_fault() == ""
        assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
        assert engine._native.run_stats()["expanding_tasks"] > 0   # the split did run


KINGS_SHUFFLING = ("k7/8/p7/P7/8/8/8/K7 w - - 0 1", ["a1b1", "a8b8", "b1a1", "b8a8"])


@pytest.mark.parametrize("threads", [1, 4])
def test_two_fold_draws_a_reused_tree_must_undo(threads):
    """Kings shuffling: the reused trees hold two-fold draws whose first
    occurrence now lies before the root, which the search undoes. One thread
    undoes them as it picks; threads picking at once (the pickers' lock
    shared) leave them for the next exclusive hold, colliding there
    meanwhile. Either way the trees stay sound."""
    engine = Engine(SlotNet(delay_s=0.0002), implementation="native", Threads=threads, **EVERY_THREAD,
                    MaxBatchesInFlight=threads, TaskWorkers=2, MinibatchSize=32, SmartPruningFactor=0)
    fen, moves = KINGS_SHUFFLING
    board = chess.Board(fen)
    fixes = deferred = 0
    for uci in moves:
        result = engine.search(board, nodes=4000)
        stats = engine._native.run_stats()
        fixes += stats["two_fold_fixes"]
        deferred += stats["deferred_fixes"]
        assert engine._native.tree_fault() == ""
        assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
        board.push_uci(uci)
    assert fixes > 0
    assert deferred == (fixes if threads > 1 else 0)


@pytest.mark.parametrize("fen", [chess.STARTING_FEN, KINGS_SHUFFLING[0],
                                 "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"])
def test_eight_threads_picking_at_once_leave_a_sound_tree(fen):
    """Eight workers, each picking with the pickers' lock shared (new
    children linked in while others read the lists, first visits claimed
    atomically), expanding unlocked and backing up beside the pickers."""
    net = SlotNet(delay_s=0.0001)
    engine = Engine(net, implementation="native", Threads=8, **EVERY_THREAD, MaxBatchesInFlight=8, TaskWorkers=1,
                    MinibatchSize=16, SmartPruningFactor=0)
    board = chess.Board(fen)
    for nodes in (3000, 6000):                 # the second run reuses the tree
        result = engine.search(board, nodes=nodes)
        assert engine._native.tree_fault() == ""
        assert sum(s.visits for s in result.stats.values()) == result.nodes - 1
    assert len(net.calls) == 8


def test_tree_check_passes_a_one_thread_tree_and_sees_visits_in_flight():
    """The check itself: a one-thread tree at rest passes, and a tree taken
    while batches are at the network fails (visits in flight)."""
    engine = Engine(SlotNet(), implementation="native", Threads=1, MinibatchSize=16)
    engine.search(chess.Board(), nodes=1500)
    assert engine._native.tree_fault() == ""

    slow = Engine(SlotNet(delay_s=0.05), implementation="native", Threads=2, **EVERY_THREAD, MinibatchSize=16)
    stop = threading.Event()
    seen = []

    def look_then_stop():
        seen.append(slow._native.tree_fault(settle=False))
        stop.set()

    timer = threading.Timer(0.4, look_then_stop)
    timer.start()
    slow.search(chess.Board(), infinite=True, stop=stop)
    timer.join()
    assert "in flight" in seen[0]
    assert slow._native.tree_fault() == ""


def test_threads_beyond_max_batches_in_flight_are_not_started():
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=8, **EVERY_THREAD, MinibatchSize=16, SmartPruningFactor=0)
    engine.search(chess.Board(), nodes=1500)
    assert len(net.calls) == 3, net.calls          # the fake GPU's suggestion
    net = SlotNet()
    engine = Engine(net, implementation="native", Threads=4, **EVERY_THREAD, MaxBatchesInFlight=4, MinibatchSize=16,
                    SmartPruningFactor=0)
    engine.search(chess.Board(), nodes=1500)
    assert len(net.calls) == 4, net.calls


def test_python_slots_run_the_search_threads_with_a_real_net(maia_path):
    """scripts/faithfulness.py --python-slots: the cpu backend's forward as
    slots called through Python, so the search threads run as on a GPU (a
    slot each) with maia-1900 on a machine without one."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
    from faithfulness import give_python_slots
    from lc0_rocm.network import load_network
    network = load_network(str(maia_path), backend="cpu")
    give_python_slots(network)
    engine = Engine(network, Threads=3, **EVERY_THREAD, MaxBatchesInFlight=3, SmartPruningFactor=0)
    result = engine.search(chess.Board(), nodes=300)
    assert len(engine._native.slots_in_use(engine.search_threads())) == 3
    assert result.best_move in chess.Board().legal_moves and result.nodes >= 300


@pytest.mark.parametrize("fen", ["6k1/8/6K1/8/8/8/8/5Q2 w - - 0 1",          # mates and stalemates near
                                 "8/8/4k3/8/2R5/8/4K3/8 w - - 0 1",
                                 chess.STARTING_FEN])
def test_backups_beside_pickers_leave_what_they_defer_sound(fen):
    """What a backup beside the pickers leaves for the exclusive hold at its
    end: first visits to terminals (their parents may become terminal) and
    nodes to make solid (here after 3 visits, so many are, deepest first,
    while eight threads pick): the tree stays sound, with every visit.
    Several searches, as a slip shows only in some: with the deferred
    backups settled before the nodes to make solid (stale ids), half the
    runs of this test failed."""
    net = SlotNet(delay_s=0.0001)
    board = chess.Board(fen)
    for _ in range(4):
        engine = Engine(net, implementation="native", Threads=8, **EVERY_THREAD, MaxBatchesInFlight=8, TaskWorkers=1,
                        MinibatchSize=16, SmartPruningFactor=0, SolidTreeThreshold=3)
        for nodes in (4000, 8000):             # the second run reuses the tree
            result = engine.search(board, nodes=nodes)
            assert engine._native.tree_fault() == ""
            assert sum(s.visits for s in result.stats.values()) == result.nodes - 1


@pytest.mark.parametrize("fen", ["k7/8/2K5/8/8/8/8/1R6 w - - 0 1", "6k1/8/6K1/8/8/8/8/5Q2 w - - 0 1"])
def test_threads_backing_up_beside_pickers_still_prove_mates(fen):
    """A fresh terminal backed up beside the pickers waits for the exclusive
    hold only when its certainty propagation changes a bound; the mates
    below are still proven through it (the root's line scores a mate: 20
    of 20 runs each, before that change and after it; 0 of 20 where every
    such backup skipped the hold)."""
    engine = Engine(SlotNet(delay_s=0.0001), implementation="native", Threads=8, **EVERY_THREAD,
                    MaxBatchesInFlight=8, TaskWorkers=1, MinibatchSize=16, SmartPruningFactor=0)
    result = engine.search(chess.Board(fen), nodes=6000)
    assert engine._native.tree_fault() == ""
    assert result.lines[0].mate is not None and result.lines[0].mate > 0, (result.best_move, result.q)


def test_threads_starting_on_an_unvisited_root_visit_it_once():
    """Threads that all gather from a fresh root: one claims its first visit;
    another that saw it unvisited but claims it after that visit is backed
    up descends instead of visiting the root again (which added a root visit
    no child held: the tree unsound). A race, so many tiny searches: before
    the fix about 1 in 700 of them on this project's 2-core VM (11 in 7,270
    searches of 8 nodes in 15 s), and this test failed 3 of 6 runs; none in
    14,640 longer searches of 8 and 12 threads since."""
    engine = Engine(SlotNet(delay_s=0.0), implementation="native", Threads=8, MaxBatchesInFlight=8,
                    **EVERY_THREAD, TaskWorkers=0, MinibatchSize=1, SmartPruningFactor=0)
    board = chess.Board()
    deadline = time.monotonic() + 2.5
    searches = 0
    while time.monotonic() < deadline:
        engine.new_game()
        engine.search(board, nodes=8)
        searches += 1
        assert engine._native.tree_fault() == "", f"search {searches}"
    assert searches > 100


def test_quality_match_plays_the_same_games_for_the_defaults_and_threads_1(maia_path, tmp_path):
    """scripts/search_quality_match.py on the sim backend (deterministic:
    no GPU timing): below ParallelSearchMinimumVisits the defaults' search
    threads grow Threads 1's trees, so each opening's two games are the same
    and A scores exactly half; with every thread gathering from the first
    visit (ParallelSearchMinimumVisits 0) the games part."""
    import json
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "scripts"))
    import search_quality_match
    common = ["-w", str(maia_path), "-b", "sim", "-o", "preset=maia-1900", "--games", "4", "--nodes", "200",
              "--max-plies", "40", "--b", "Threads=1"]
    assert search_quality_match.main(common + ["--a", "", "--out", str(tmp_path / "same")]) == 0
    same = json.loads((tmp_path / "same" / "quality_match.json").read_text())
    assert same["same_game_pairs"] == 2 and same["score"] == 0.5
    assert search_quality_match.main(common + ["--a", "ParallelSearchMinimumVisits=0",
                                               "--out", str(tmp_path / "apart")]) == 0
    apart = json.loads((tmp_path / "apart" / "quality_match.json").read_text())
    assert apart["same_game_pairs"] < 2


class ReleasingSlotNet(SlotNet):
    """A SlotNet whose backend takes its slots back (as a GPU backend's
    stream pool does) and hands the released ones out again first."""

    def __init__(self):
        super().__init__()
        self.handed: list = []
        self.released: list = []

    def native_slots(self, count):
        reused = self.released[:count]
        del self.released[:len(reused)]
        slots = reused + super().native_slots(count - len(reused))
        self.handed += slots
        return slots

    def release_slots(self, slots):
        self.released += slots


def test_a_dropped_engine_gives_its_slots_back_for_the_next_to_reuse():
    """Search after search on one network (an Engine made and dropped each
    time) reuses the backend's slots: on a GPU each is a stream with its
    buffers and graphs, which a search that kept them would pile up until
    the device's memory ran out."""
    net = ReleasingSlotNet()
    for _ in range(4):
        engine = Engine(net, implementation="native", Threads=3, **EVERY_THREAD, MinibatchSize=16,
                        SmartPruningFactor=0)
        engine.search(chess.Board(), nodes=600)
        del engine
        gc.collect()
        assert len(net.released) == 3, net.released
    assert len(net.callbacks) == 3          # the first engine's three slots, reused by the other three
    assert len(net.calls) == 3


def test_a_closed_many_search_gives_its_slots_back():
    from lc0_rocm.analysis.many import ManySearch
    net = ReleasingSlotNet()
    many = ManySearch(net, {"SmartPruningFactor": 0}, searches=4, groups=2)
    taken = list(net.handed)
    many.close()
    assert len(taken) == 2 and net.released == taken
