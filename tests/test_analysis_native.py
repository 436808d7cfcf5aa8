"""The native parts of analysis (native/core: search_many.cpp, the memo,
api_encode_rows.cpp) through ManySearch and RowEvaluator: many searches at
once, their calls merged by the batching multiplexer (its own tests:
test_analysis_mux.py), give what Engine.search gives one at a time,
whatever the concurrency; text rows encode as python-chess boards do."""
from __future__ import annotations

import os
import threading
import time

import chess
import numpy as np
import pytest

from lc0_rocm import encoder, native_core
from lc0_rocm.analysis import columns
from lc0_rocm.analysis.evaluate import RowEvaluator
from lc0_rocm.analysis.inputs import board_of_row, board_position
from lc0_rocm.analysis.many import ManySearch, ManySearchError
from lc0_rocm.backends.base import BackendAttributes
from lc0_rocm.bench import POSITIONS, board_for
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network
from native_slot_fakes import CoreRandomSlots

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")

ROWS = POSITIONS[:12]
NODES = 120


@pytest.fixture(scope="module")
def random_net():
    with load_network(None, backend="random") as net:
        yield net


class RecordingSlots(CoreRandomSlots):
    """A fake GPU backend: native slots that run the core's random net and
    record each call's batch size."""

    input_format = 1
    has_moves_left = False
    name = "fake-gpu"

    def __init__(self, delay_s: float = 0.0):
        super().__init__(seed=0, uniform=0)
        self.sizes: list[int] = []
        self.lock = threading.Lock()
        self.backend = self
        self.delay_s = delay_s

    def _forward(self, ctx, n, masks, values, policy, wdl, moves_left):
        with self.lock:
            self.sizes.append(n)
        if self.delay_s:
            time.sleep(self.delay_s)      # as a GPU takes its time: the other searches queue meanwhile
        return self.run_random(n, masks, values, policy, wdl, moves_left)

    def forward_packed(self, masks, values):   # what Engine's Python parts may call
        raise AssertionError("the analysis search must stay native")

    def attributes(self):                        # a GPU's: 2 x its multiprocessors a batch
        return BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=3,
                                 recommended_batch_size=8, maximum_batch_size=256)


def engine_results(net, rows, nodes, **options):
    """Engine.search one row at a time, with analysis's defaults."""
    from lc0_rocm.analysis.many import ANALYSIS_DEFAULTS
    engine = Engine(net, Threads=1, SmartPruningFactor=0, **{**ANALYSIS_DEFAULTS, **options})
    out = []
    for row in rows:
        engine.new_game()
        r = engine.search(board_for(row), nodes=nodes)
        out.append((r.best_move.uci(), " ".join(m.uci() for m in r.pv), r.nodes, r.lines[0].score_cp,
                    round(r.q, 12), tuple(round(x, 12) for x in r.wdl)))
    return out


def many_results(many, rows, nodes):
    cols = many.run(list(rows), nodes=nodes)
    return [(str(b), str(p), int(n), None if s == columns.NO_SCORE else int(s), round(float(q), 12), tuple(round(float(x), 12) for x in w))
            for b, p, n, s, q, w in zip(cols["best"], cols["pv"], cols["nodes"], cols["score_cp"], cols["q"],
                                        cols["wdl"])]


def test_an_endgame_temperature_samples_among_every_root_move(random_net, monkeypatch):
    """TempEndgame from move 1 on: the result code samples among all the
    root edges (analysis hands it every edge then, not just the best)."""
    import random
    from lc0_rocm import engine as engine_module
    picked = []
    real = engine_module._root_edge_with_temperature

    def recording(params, snap, temperature, searchmoves, rng=None):
        picked.append((temperature, len(snap.edges)))
        return real(params, snap, temperature, searchmoves, rng=random.Random(7))
    monkeypatch.setattr(engine_module, "_root_edge_with_temperature", recording)
    many = ManySearch(random_net, {"SmartPruningFactor": 0, "TempCutoffMove": 1, "TempEndgame": 2.0}, searches=2)
    try:
        cols = many.run(list(ROWS[:4]), nodes=40)
    finally:
        many.close()
    assert len(picked) == 4 and {temperature for temperature, _ in picked} == {2.0}
    # Results are read in the order the searches finish: compare as sets.
    assert sorted(edges for _, edges in picked) == sorted(board_for(row).legal_moves.count() for row in ROWS[:4])
    for row, best in zip(ROWS[:4], cols["best"]):
        assert chess.Move.from_uci(str(best)) in board_for(row).legal_moves


@pytest.mark.parametrize("fen", [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "8/8/8/4k3/8/8/4K3/7R b - - 0 61",
    "8/8/8/4k3/8/8/4K3/7R b - - 0 0",        # fullmove 0 reads as 1
    "8/8/8/4k3/8/8/4K3/7R w - -",            # no counters: move 1
])
def test_result_ply_is_python_chess_ply(fen):
    """The result code reads only the ply; analysis computes it from the
    row's first position as chess.Board would, moves after it ignored."""
    from lc0_rocm.analysis.many import _RootPly
    assert _RootPly(fen).ply() == chess.Board(fen).ply()
    assert _RootPly(fen + " moves e2e4").ply() == chess.Board(fen).ply()


@pytest.mark.parametrize("searches", [1, 3, 8, 40])
def test_many_searches_equal_engine_search(random_net, searches):
    repeat = 4 if searches > 8 else 1          # more jobs than searches, and then fewer
    expected = engine_results(random_net, ROWS, NODES) * repeat
    many = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=searches)
    try:
        assert many.batching == "merge"
        assert many_results(many, ROWS * repeat, NODES) == expected
        stats = many.stats()[0]
        assert stats["rows"] > 0 and stats["rounds"] <= stats["calls"]
        if searches > 1:      # rounds hold several searches' batches
            assert stats["largest_round"] > max(1, stats["rows"] // stats["rounds"])
    finally:
        many.close()


def test_a_pv_longer_than_the_first_buffer_comes_back_whole(random_net, monkeypatch):
    from lc0_rocm.analysis import many as many_module
    expected = engine_results(random_net, ROWS[:3], NODES)
    assert all(len(pv) > 8 for _, pv, *_ in expected)
    monkeypatch.setattr(many_module, "PV_BUFFER", 2)        # every PV asked again, some twice
    many = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=2)
    try:
        assert many_results(many, ROWS[:3], NODES) == expected
    finally:
        many.close()


def test_search_threads_count_their_time(random_net):
    """lc0core_search_many_stats: jobs taken, and where the threads' time
    went; a thread that waited for its first job counts that wait (a wait
    is counted when it ends with a job: one thread may take them all)."""
    many = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=2)
    try:
        time.sleep(0.3)                         # no job yet: both threads wait
        many.run(ROWS[:4], nodes=NODES)
        t = many.stats()[0]
        assert t["jobs"] == 4
        assert t["threads_job_wait_s"] >= 0.3
        assert t["threads_search_s"] > 0 and t["threads_setup_s"] > 0 and t["threads_result_s"] > 0
        assert t["threads_search_s"] >= t["search_gather_s"]   # gathering is part of searching
    finally:
        many.close()


MATE_ROWS = ["6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1",                       # Ra8#
             "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3",   # Qxf7#
             "6k1/5ppp/8/8/8/8/r4PPP/6K1 b - - 0 1"]                         # ...Ra1#


@pytest.mark.parametrize("net_kind, options", [
    ("random", {}),
    ("random", {"ScoreType": "centipawn"}),
    ("random", {"Contempt": 150, "ContemptMode": "white_side_analysis"}),
    ("tiny-resnet", {}),                                   # a moves-left head; numpy's separate calls
])
def test_best_edge_rows_equal_the_engine_result_rows(make_test_net, monkeypatch, net_kind, options):
    """A job whose result needs only its best edge fills its row straight
    from Engine's line_score and best_value; the row equals the one
    Engine.result_of's SearchResult gives (every column: score, mate,
    moves left, contempt's rescaled score)."""
    from lc0_rocm.analysis import many as many_module
    weights = None if net_kind == "random" else make_test_net(net_kind, seed=3)
    rows = ROWS[:6] + MATE_ROWS
    nodes = NODES if net_kind == "random" else 40
    with load_network(weights, backend="random" if weights is None else "cpu") as net:
        def run():
            many = ManySearch(net, {"SmartPruningFactor": 0, **options}, searches=3)
            try:
                return many.run(rows, nodes=nodes)
            finally:
                many.close()

        lean = run()
        full_calls = []

        def full(self, job, edge, pv_text, black, out, i, rescale):
            full_calls.append(i)
            self._fill(job, [many_module._root_edge(self.ffi, edge)], [job.best_edge], pv_text,
                       many_module._RootPly(rows[i]), black, out, i, rescale)

        monkeypatch.setattr(ManySearch, "_fill_best", full)
        reference = run()
    assert sorted(full_calls) == list(range(len(rows)))
    assert any(m != 0 for m in lean["mate"]) and any(s != columns.NO_SCORE for s in lean["score_cp"])
    for name in ("wdl", "q", "moves_left", "score_cp", "mate", "best", "pv", "nodes"):
        a, b = lean[name], reference[name]
        if a.dtype.kind == "f":
            assert np.array_equal(a, b, equal_nan=True), name
        else:
            assert list(a) == list(b), name
    if net_kind == "tiny-resnet":
        assert not np.isnan(lean["moves_left"]).any()


def test_results_at_once_equal_each_jobs_own(random_net):
    """lc0core_search_many_results: a range of jobs read in one call equals
    reading each (result, best edge, PV); too small a PV buffer is said,
    with the size, and nothing written; unfinished jobs are refused."""
    many = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=3)
    ffi, lib, handle = many.ffi, many.lib, many._many
    rows = ROWS[:5] + ["7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"]          # the last: stalemate, no search
    try:
        text = ("\0".join(rows) + "\0").encode()
        limits = ffi.new("lc0core_search_limits[]", len(rows))
        for lim in limits:
            lim.nodes, lim.movetime, lim.time_budget, lim.depth, lim.mate = NODES, -1.0, -1.0, -1, -1
            lim.rescale_ratio = 1.0
        first, finished = ffi.new("long long*"), ffi.new("long long*")
        assert lib.lc0core_search_many_submit(handle, len(rows), text, len(text), limits, first) == 0
        jobs, edges = ffi.new("lc0core_search_job[]", 6), ffi.new("lc0core_root_edge[]", 6)
        offsets, needed, pv = ffi.new("size_t[]", 6), ffi.new("size_t*"), ffi.new("char[]", 4096)
        assert lib.lc0core_search_many_results(handle, first[0] + 6, 1, jobs, edges, pv, 4096, offsets,
                                               needed) == lib.LC0CORE_INVALID_ARGUMENT
        lib.lc0core_search_many_wait(handle, first[0] + len(rows), 60.0, finished)
        assert finished[0] == first[0] + len(rows)
        pv[0] = b"x"
        assert lib.lc0core_search_many_results(handle, first[0], 6, jobs, edges, pv, 3, offsets,
                                               needed) == lib.LC0CORE_BUFFER_TOO_SMALL
        assert pv[0] == b"x" and needed[0] > 3
        assert lib.lc0core_search_many_results(handle, first[0], 6, jobs, edges, pv, 4096, offsets,
                                               needed) == 0
        texts = ffi.unpack(pv, needed[0]).decode().split("\0")[:-1]
        for k in range(6):
            own = ffi.new("lc0core_search_job*")
            assert lib.lc0core_search_many_job(handle, first[0] + k, own) == 0
            assert bytes(ffi.buffer(own)) == bytes(ffi.buffer(jobs + k, ffi.sizeof("lc0core_search_job")))
            own_pv = ffi.new("char[]", 4096)
            assert lib.lc0core_search_many_pv(handle, first[0] + k, own_pv, 4096) == 0
            assert texts[k] == ffi.string(own_pv).decode()
            if own.best_edge >= 0:
                all_edges, count = ffi.new("lc0core_root_edge[]", own.num_edges), ffi.new("int*")
                assert lib.lc0core_search_many_edges(handle, first[0] + k, all_edges, own.num_edges, count) == 0
                assert bytes(ffi.buffer(all_edges + own.best_edge, ffi.sizeof("lc0core_root_edge"))) == \
                    bytes(ffi.buffer(edges + k, ffi.sizeof("lc0core_root_edge")))
                assert texts[k].split()[0] == ffi.string(edges[k].uci).decode()
            else:
                assert bytes(ffi.buffer(edges + k, ffi.sizeof("lc0core_root_edge"))) == bytes(ffi.sizeof("lc0core_root_edge"))
                assert texts[k] == ""
        assert jobs[5].outcome == lib.LC0CORE_JOB_STALEMATE and jobs[5].best_edge == -1
        assert lib.lc0core_search_many_forget(handle, first[0] + len(rows)) == 0
    finally:
        many.close()


def test_two_groups_on_native_slots_merge_and_equal_engine_search(random_net):
    # Its recommended 8 make the minibatch 16, as Engine's would be. Its
    # calls take 2 ms, so a search's next batch is queued before the round
    # it waits on ends, however the host's threads are scheduled (an
    # instant network on a loaded host let searches run rounds alone).
    fake = RecordingSlots(delay_s=0.002)
    expected = engine_results(random_net, ROWS, NODES, MinibatchSize=16)
    many = ManySearch(fake, {"SmartPruningFactor": 0}, searches=6, groups=2)
    try:
        assert (many.groups, many.batching) == (2, "merge")
        assert many_results(many, ROWS, NODES) == expected
        assert max(fake.sizes) > 16     # several searches' leaves in one call
    finally:
        many.close()


def game_rows(plies: int) -> list[str]:
    """Rows of the Opera game, ply by ply, each with its history (as
    analyse reads a PGN)."""
    import io
    import chess.pgn
    from analysis_data import OPERA
    game = chess.pgn.read_game(io.StringIO(OPERA))
    board, rows = game.board(), []
    for move in list(game.mainline_moves())[:plies]:
        rows.append(board_position("test", 0, board).row)
        board.push(move)
    return rows


def test_shared_answers_change_no_search(random_net):
    """A game's positions searched side by side meet each other's trees:
    the shared memo answers those requests, and every search still equals
    Engine.search alone (a memo answer is what the network returned for
    the same planes)."""
    rows = game_rows(33)
    expected = engine_results(random_net, rows, 200)
    many = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=8)
    try:
        assert many_results(many, rows, 200) == expected
        stats = many.stats()
        assert stats[0]["memo_hits"] > 0 and stats[0]["memo_lookups"] > stats[0]["memo_hits"]
        # The rows at the network are the lookups the memo did not answer.
        assert sum(m["rows"] for m in stats) == stats[0]["memo_lookups"] - stats[0]["memo_hits"]
    finally:
        many.close()
    off = ManySearch(random_net, {"SmartPruningFactor": 0}, searches=8, memo=False)
    try:
        assert many_results(off, rows, 200) == expected
        assert "memo_hits" not in off.stats()[0]
    finally:
        off.close()


def test_a_search_run_sized_by_its_nodes_gets_that_memo(random_net):
    """`searcher(nodes=...)` (what a shard worker calls) hands the node
    count on: the memo made for it has the room memo_answers gives, and the
    searches are the same as with the least room."""
    from lc0_rocm.analysis.many import searcher
    from lc0_rocm.analysis.sizing import MEMO_MIN_ANSWERS, memo_answers
    rows = game_rows(12)
    expected = engine_results(random_net, rows, 200)
    many = searcher(random_net, {"SmartPruningFactor": 0}, searches=2, nodes=200_000)
    try:
        assert many_results(many, rows, 200) == expected
        assert many.stats()[0]["memo_answers"] == memo_answers(2, 200_000) > MEMO_MIN_ANSWERS
    finally:
        many.close()


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from Linux's /proc")
def test_a_movetime_run_gets_the_most_memo_room_but_touches_only_what_it_writes(random_net):
    """A shard worker searching by movetime alone (no node count to size the
    memo by) gets the most room; the ring's ~330 MB at that room is not
    touched until answers come, so making it costs little memory."""
    from lc0_rocm.analysis.settings import Settings
    from lc0_rocm.analysis.sizing import MEMO_MAX_ANSWERS
    from lc0_rocm.analysis.worker import ShardWorker
    before = resident_bytes()
    worker = ShardWorker(Settings("search", movetime=0.01), network=random_net, searches=2)
    try:
        grown = resident_bytes() - before
        assert worker.engine.memo_answers == MEMO_MAX_ANSWERS
        assert grown < 128 << 20, f"making the memo took {grown >> 20} MiB"
        columns_out = worker.compute(game_rows(4))
        assert len(columns_out["best"]) == 4
    finally:
        worker.close()


def test_searcher_searches_with_the_fitted_minibatch(random_net):
    from lc0_rocm.analysis.many import searcher
    rows = game_rows(12)
    many = searcher(random_net, {"SmartPruningFactor": 0}, searches=4, nodes=150)
    try:
        got = many_results(many, rows, 150)
    finally:
        many.close()
    assert got == engine_results(random_net, rows, 150, MinibatchSize=32)
    assert got != engine_results(random_net, rows, 150)                 # 256 builds other trees


def test_memo_refuses_bad_arguments():
    ffi, lib = native_core.load()
    out = ffi.new("lc0core_eval_memo**")
    assert lib.lc0core_eval_memo_create(0, out) != 0 and "capacity" in native_core.last_error()
    assert lib.lc0core_eval_memo_create(16, ffi.NULL) != 0
    stats = ffi.new("lc0core_eval_memo_stats*")
    assert lib.lc0core_eval_memo_get_stats(ffi.NULL, stats) != 0
    assert lib.lc0core_search_set_memo(ffi.NULL, ffi.NULL) != 0
    assert lib.lc0core_eval_memo_create(16, out) == 0
    memo = ffi.gc(out[0], lib.lc0core_eval_memo_destroy)
    assert lib.lc0core_eval_memo_get_stats(memo, stats) == 0
    assert (stats.lookups, stats.hits, stats.entries) == (0, 0, 0)


def test_separate_batching_keeps_each_search_own_batches(make_test_net):
    """numpy's cpu backend rounds by batch size: each search's batch runs as
    its own call, so many at once equal Engine.search bit for bit."""
    with load_network(make_test_net("tiny-resnet", seed=3), backend="cpu") as net:
        rows = ROWS[:4]
        expected = engine_results(net, rows, 40)
        many = ManySearch(net, {"SmartPruningFactor": 0}, searches=3)
        try:
            assert many.batching == "separate"
            assert many_results(many, rows, 40) == expected
            assert "memo_hits" not in many.stats()[0]   # no shared answers: numpy's depend on the batch
        finally:
            many.close()


def test_fixed_batching_pads_every_call(random_net):
    fake = RecordingSlots()
    many = ManySearch(fake, {"SmartPruningFactor": 0}, searches=4, groups=1, batching="fixed")
    try:
        expected = engine_results(random_net, ROWS[:4], 60, MinibatchSize=16)
        assert many_results(many, ROWS[:4], 60) == expected
        assert set(fake.sizes) == {256}
        assert many.stats()[0]["padded_rows"] > 0
    finally:
        many.close()


class PinnedSlots(RecordingSlots):
    """A fake GPU (device_info set: calls of its recommended 8 rows) whose
    host_empty buffers the mux must use for every call."""
    device_info = "fake GPU"

    def __init__(self):
        super().__init__()
        self.buffers: list[np.ndarray] = []
        self.pointers: set[int] = set()

    def host_empty(self, shape, dtype=np.float32):
        a = np.full(shape, 7, dtype)        # not zeros: padding must be written
        self.buffers.append(a)
        return a

    def _forward(self, ctx, n, masks, values, policy, wdl, moves_left):
        with self.lock:
            self.pointers.add(int(self.ffi.cast("uintptr_t", masks)))
            self.pointers.add(int(self.ffi.cast("uintptr_t", policy)))
        return super()._forward(ctx, n, masks, values, policy, wdl, moves_left)


def test_calls_run_in_the_backends_host_buffers(random_net):
    """On a GPU the mux's calls read and write the backend's host_empty
    (page-locked) buffers; a search's batch spans calls of 8 rows, and the
    results are Engine.search's."""
    fake = PinnedSlots()
    many = ManySearch(fake, {"SmartPruningFactor": 0, "MinibatchSize": 20}, searches=3, groups=1)
    try:
        assert many.batching == "fixed"
        assert many_results(many, ROWS[:5], 60) == engine_results(random_net, ROWS[:5], 60, MinibatchSize=20)
        assert set(fake.sizes) == {8} and len(fake.sizes) > 10
        masks, policy = fake.buffers[0], fake.buffers[2]
        assert masks.shape == (8, 112) and policy.shape == (8, 1858)
        assert fake.pointers == {masks.ctypes.data, policy.ctypes.data}
    finally:
        many.close()


def test_positions_without_moves_and_bad_rows(random_net):
    many = ManySearch(random_net, {}, searches=2)
    try:
        mate = "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3"
        stalemate = "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"
        cols = many.run([mate, stalemate], nodes=10)
        assert list(cols["outcome"]) == [1, 2]
        assert [tuple(w) for w in cols["wdl"]] == [(0, 0, 1), (0, 1, 0)]
        assert list(cols["best"]) == ["", ""]
        cols = many.run([POSITIONS[0] + " moves e2e5", "not a fen", POSITIONS[1]], nodes=10)
        assert "illegal move e2e5" in cols["error"][0] and "piece placement" in cols["error"][1]
        assert cols["error"][2] == "" and cols["best"][2] != ""       # the rest is searched
    finally:
        many.close()


def test_a_failing_forward_fails_the_run_and_says_why():
    class Failing(RecordingSlots):
        def _forward(self, ctx, n, *args):
            return 1 if len(self.sizes) > 3 else super()._forward(ctx, n, *args)
    many = ManySearch(Failing(), {}, searches=3, groups=1)
    with pytest.raises(ManySearchError, match="forward call failed"):
        many.run(ROWS[:6], nodes=200)
    many.close()


# ---------------------------------------------------------------- rows -> planes
def game_boards(count: int, seed: int = 5) -> list[chess.Board]:
    import random
    rng = random.Random(seed)
    boards, board = [], chess.Board()
    while len(boards) < count:
        moves = list(board.legal_moves)
        if not moves or board.ply() > 120:
            board = chess.Board()
            continue
        board.push(rng.choice(moves))
        boards.append(board.copy())
    return boards


@pytest.mark.parametrize("input_format", [1, 3, 132])
def test_rows_encode_like_the_boards_they_stand_for(input_format):
    from lc0_rocm.analysis.evaluate import _Buffers
    boards = game_boards(150)
    rows = [board_position("t", 1, b).row for b in boards]
    masks, values, transforms = encoder.encode_batch_packed(boards, input_format)

    class Net:   # the row evaluator's buffers need host_empty only
        @staticmethod
        def host_empty(shape, dtype=np.float32):
            return np.empty(shape, dtype)
        input_format = 1
    b = _Buffers(Net, len(rows))
    ffi, lib = native_core.load()
    text = b"\0".join(r.encode() for r in rows) + b"\0"
    p = b.pointer
    native_core.check(lib.lc0core_encode_rows(
        len(rows), text, len(text), input_format, 3, p("uint64_t*", b.masks), p("float*", b.values),
        p("int32_t*", b.transforms), p("uint16_t*", b.moves), p("int16_t*", b.indices),
        p("int32_t*", b.counts), p("int32_t*", b.flags), p("int32_t*", b.status)))
    assert not b.status.any()
    assert np.array_equal(b.masks, masks) and np.array_equal(b.values, values)
    assert np.array_equal(b.transforms, transforms)
    for i, board in enumerate(boards[:40]):
        moves, indices = encoder.policy_indices(board, input_format, int(transforms[i]))
        n = b.counts[i]
        assert [m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in moves] == \
            list(b.moves[i, :n])
        assert list(indices) == list(b.indices[i, :n])
        assert bool(b.flags[i] & 1) == board.is_check()


def test_row_evaluator_equals_evaluate_batch(random_net):
    boards = game_boards(300, seed=9) + [chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")]
    rows = [board_position("t", 1, b).row for b in boards]
    cols = RowEvaluator(random_net, top_k=4, chunk=64).run(rows)
    evaluations = random_net.evaluate_batch(boards)
    for i, ev in enumerate(evaluations[:-1]):
        ranked = sorted(ev.policy.items(), key=lambda item: -item[1])[:4]
        assert list(cols["top_moves"][i][:len(ranked)]) == [m.uci() for m, _ in ranked]
        assert np.allclose(cols["top_probs"][i][:len(ranked)], [p for _, p in ranked], atol=0, rtol=0)
        assert np.allclose(cols["wdl"][i], ev.wdl, rtol=0, atol=1e-7)
    assert cols["outcome"][-1] == 2 and cols["best"][-1] == ""


def test_row_evaluator_three_stage_pipeline_equals_one_stage(random_net):
    """A GPU backend's three stages (encode, forward, finish on three
    threads, buffers reused three chunks later) give the columns of the
    one-stage loop, over many chunks and a short last one; a forward pass
    that fails in the middle fails the run."""
    boards = game_boards(230, seed=4)
    rows = [board_position("t", 1, b).row for b in boards]
    plain = RowEvaluator(random_net, top_k=3, chunk=16).run(rows)
    staged = RowEvaluator(random_net, top_k=3, chunk=16)
    staged.gpu = True
    got = staged.run(rows)
    assert set(got) == set(plain)
    for key in plain:
        nan_too = plain[key].dtype.kind == "f"           # e.g. moves_left without a head: NaN
        assert np.array_equal(got[key], plain[key], equal_nan=nan_too), key

    calls = []

    class Failing:
        def __getattr__(self, name):
            return getattr(random_net, name)

        def forward_packed_into(self, masks, values, out):
            calls.append(len(masks))
            if len(calls) == 5:
                raise RuntimeError("device lost")
            return random_net.forward_packed_into(masks, values, out)

    failing = RowEvaluator(Failing(), top_k=3, chunk=16)
    failing.gpu = True
    with pytest.raises(RuntimeError, match="device lost"):
        failing.run(rows)


def test_row_errors_are_explained():
    ffi, lib = native_core.load()
    out = ffi.new("char[]", 256)
    for row, words in [("not a fen", "piece placement"), (POSITIONS[0] + " moves e2e4 e2e4", "illegal move"),
                       ("8/8/8/8/8/8/8/8 w - - 0 1", "impossible")]:
        assert lib.lc0core_position_row_error(row.encode(), out, 256) == 0
        assert words in ffi.string(out).decode()
    assert lib.lc0core_position_row_error(POSITIONS[4].encode(), out, 256) == 0
    assert ffi.string(out) == b""
    # the row's FEN: a NULL, no room or garbage bytes give a status or a reason, never a crash
    fen = ffi.new("char[]", 128)
    assert lib.lc0core_position_row_fen(ffi.NULL, fen, 128, out, 256) != 0
    assert lib.lc0core_position_row_fen(b"8/8 w", ffi.NULL, 128, out, 256) != 0
    assert lib.lc0core_position_row_fen(b"8/8 w", fen, 0, out, 256) != 0
    assert lib.lc0core_position_row_fen(bytes(range(1, 256)), fen, 128, out, 256) == 0
    assert ffi.string(fen) == b"" and ffi.string(out) != b""
    assert lib.lc0core_position_row_fen((POSITIONS[0] + " moves e2e4").encode(), fen, 20, out, 256) == 0
    assert ffi.string(fen) == b"rnbqkbnr/pppppppp/8"        # cut to the room given
    # a row's every FEN: too little room or too many positions is a status; a bad row a reason
    many, clocks, count = ffi.new("char[]", 1024), ffi.new("int32_t[]", 4), ffi.new("int*")
    row = (POSITIONS[0] + " moves e2e4 e7e5 g1f3").encode()
    assert lib.lc0core_row_fens(row, many, 1024, clocks, 4, count, out, 256) == 0 and count[0] == 4
    assert list(clocks) == [0, 0, 0, 1]
    assert lib.lc0core_row_fens(row, many, 1024, clocks, 3, count, out, 256) != 0
    assert lib.lc0core_row_fens(row, many, 100, clocks, 4, count, out, 256) != 0
    assert lib.lc0core_row_fens(ffi.NULL, many, 1024, clocks, 4, count, out, 256) != 0
    assert lib.lc0core_row_fens(bytes(range(1, 256)), many, 1024, clocks, 4, count, out, 256) == 0
    assert count[0] == 0 and ffi.string(out) != b""
    assert board_of_row(POSITIONS[4]).fen() == board_for(POSITIONS[4]).fen()
    # SAN tokens: moves up to the first token declined; a bad FEN, NULLs, no room: a status
    moves, resolved = ffi.new("char[]", 64), ffi.new("int*")
    assert lib.lc0core_san_moves(POSITIONS[0].encode(), b"e4 e5 Nf3 Qh7 Nc3", moves, 64, resolved) == 0
    assert (resolved[0], ffi.string(moves)) == (3, b"e2e4 e7e5 g1f3")
    assert lib.lc0core_san_moves(POSITIONS[0].encode(), b"", moves, 64, resolved) == 0 and resolved[0] == 0
    assert lib.lc0core_san_moves(b"8/8 w", b"e4", moves, 64, resolved) != 0
    assert lib.lc0core_san_moves(ffi.NULL, b"e4", moves, 64, resolved) != 0
    assert lib.lc0core_san_moves(POSITIONS[0].encode(), ffi.NULL, moves, 64, resolved) != 0
    assert lib.lc0core_san_moves(POSITIONS[0].encode(), b"e4 e5 Nf3", moves, 8, resolved) != 0
    assert lib.lc0core_san_moves(POSITIONS[0].encode(), bytes(range(1, 256)), moves, 64, resolved) == 0
    assert resolved[0] == 0


def test_cancel_from_another_thread_ends_runs_at_once(random_net):
    """Ctrl-C's path: cancel() stops the searches; runs going on end with
    "cancelled" (not with the stopped searches' partial results), as does
    every later run."""
    many = ManySearch(random_net, {}, searches=2)
    errors = []

    def search():
        try:
            many.run(ROWS[:4], nodes=10_000_000)
        except ManySearchError as e:
            errors.append(str(e))

    threads = [threading.Thread(target=search) for _ in range(2)]
    for t in threads:
        t.start()
    threading.Event().wait(0.3)
    many.cancel()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads)
    assert errors == ["cancelled", "cancelled"]
    with pytest.raises(ManySearchError, match="cancelled"):
        many.run(ROWS[:1], nodes=10)
    many.close()


def test_analysis_options_fix_threads_and_default_task_workers_off():
    from lc0_rocm.analysis.many import check_options
    merged = check_options({"cpuct": 2.0})
    assert merged["Threads"] == 1 and merged["TaskWorkers"] == 0 and merged["CPuct"] == 2.0
    assert check_options({"taskworkers": 3})["TaskWorkers"] == 3          # a user's value wins
    with pytest.raises(ValueError, match="cannot be set for analysis"):
        check_options({"threads": 4})


