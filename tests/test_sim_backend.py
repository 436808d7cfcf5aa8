"""The `sim` backend (a simulated GPU: the random net's outputs, delivered
after a pass time from a batch-size curve, one pass at a time) and the pass
log that it and the GPU backends keep (backends/passes.py)."""
from __future__ import annotations

import threading

import chess
import numpy as np
import pytest

from lc0_rocm import backends, native_core
from lc0_rocm.backends.base import BackendError
from lc0_rocm.backends.passes import PassLog
from lc0_rocm.engine import Engine
from lc0_rocm.network import load_network

pytestmark = pytest.mark.skipif(not native_core.available()[0],
                                reason=f"native core unavailable: {native_core.available()[1]}")


def _inputs(n, seed):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64), rng.random((n, 112), dtype=np.float32))


def test_outputs_are_the_random_backends():
    masks, values = _inputs(5, 1)
    sim = backends.create("sim", None, seed="3", pass_us="0", position_us="0")
    rnd = backends.create("random", None, seed="3")
    try:
        for got, want in zip(sim.forward_packed(masks, values), rnd.forward_packed(masks, values)):
            np.testing.assert_array_equal(got, want)
    finally:
        sim.close()


def test_passes_run_one_at_a_time_for_their_modelled_time():
    sim = backends.create("sim", None, pass_us="2000", position_us="100")   # 2 ms + 0.1 ms a position
    masks, values = _inputs(10, 2)
    sim.pass_log_start()
    threads = [threading.Thread(target=sim.forward_packed, args=(masks, values)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log = sim.pass_log()
    sim.close()
    assert len(log) == 4 and list(log.positions) == [10] * 4
    np.testing.assert_allclose(log.end_ms - log.begin_ms, 3.0, atol=0.01)   # 2 + 10 x 0.1 ms
    order = np.argsort(log.begin_ms)
    assert np.all(log.begin_ms[order][1:] >= log.end_ms[order][:-1] - 1e-3)   # no overlap
    assert log.busy_ms() == pytest.approx(12.0, abs=0.05)


@pytest.mark.parametrize("options, message", [
    ({"preset": "t99"}, "preset must be one of"),
    ({"pass_us": "-1"}, "pass_us must be in"),
    ({"position_us": "x"}, "position_us must be a number"),
    ({"speed": "1"}, "unknown option"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(BackendError, match=message):
        backends.create("sim", None, **options)


def test_a_threaded_search_reaches_it_through_native_slots():
    net = load_network(None, backend="sim", backend_opts="preset=maia-1900")
    try:
        engine = Engine(net, Threads=3, ParallelSearchMinimumVisits=0, SmartPruningFactor=0)
        net.backend.pass_log_start()
        result = engine.search(chess.Board(), nodes=3000)
        log = net.backend.pass_log()
        assert result.nodes >= 3000 and result.best_move in chess.Board().legal_moves
        assert len(log) >= 3 and log.positions.sum() >= result.nn_evals
        assert engine._native.tree_fault() == ""
    finally:
        net.close()


def test_pass_log_counts_overlapping_passes_once():
    log = PassLog(np.array([0.0, 1.0, 5.0, 5.5]), np.array([2.0, 3.0, 6.0, 5.8]),
                  np.array([1, 3, 64, 300]), np.array([0, 1, 0, 1]))
    assert log.busy_ms() == pytest.approx(4.0)     # [0, 3] and [5, 6]
    assert log.summed_ms() == pytest.approx(5.3)
    assert log.histogram() == {"1": 1, "2-3": 1, "64-127": 1, "256-511": 1}
    assert len(log.within(0.5, 5.5)) == 2
    assert PassLog.from_records([], 0).busy_ms() == 0.0
