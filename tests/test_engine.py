"""Engine API: options (lc0 names, validation), network handling, results."""
from __future__ import annotations

import chess
import pytest

from lc0_rocm.backends.base import BackendAttributes
from lc0_rocm.engine import Engine, MoveStats, SearchInfo, SearchResult
from lc0_rocm.search.params import OPTIONS

from search_fakes import MaterialEvaluator


def test_options_carry_lc0_names_and_defaults():
    expected = {"CPuct": 1.745, "CPuctBase": 38739.0, "CPuctFactor": 3.894,
                "CPuctAtRoot": 1.745, "FpuValue": 0.330, "FpuValueAtRoot": 1.0,
                "FpuStrategy": "reduction", "FpuStrategyAtRoot": "same",
                "PolicyTemperature": 1.359, "SmartPruningFactor": 1.33,
                "MaxCollisionVisits": 80000, "MaxOutOfOrderEvalsFactor": 2.4,
                "MovesLeftMaxEffect": 0.0345, "MovesLeftThreshold": 0.8,
                "MovesLeftSlope": 0.0027, "MovesLeftScaledFactor": 1.6521,
                "MovesLeftQuadraticFactor": -0.6521, "MovesLeftConstantFactor": 0.0,
                "TwoFoldDraws": True, "StickyEndgames": True, "MultiPV": 1,
                "MinibatchSize": 0, "MaxPrefetch": 32, "ScoreType": "WDL_mu"}
    for name, value in expected.items():
        assert Engine.OPTIONS[name].default == value, name
    for spec in OPTIONS.values():
        assert spec.type in ("spin", "check", "string", "combo", "float")


def test_set_option_validates():
    eng = Engine(MaterialEvaluator())
    eng.set_option("cpuct", "2.5")                 # UCI names are case-insensitive
    assert eng.params.CPuct == 2.5
    eng.set_option("TwoFoldDraws", "false")
    assert eng.params.TwoFoldDraws is False
    eng.set_option("FpuStrategy", "Absolute")
    assert eng.params.FpuStrategy == "absolute"
    for name, value in [("NoSuchOption", 1), ("CPuct", "abc"), ("CPuct", -1),
                        ("MultiPV", "1.5"), ("MultiPV", 0), ("FpuStrategy", "weird"),
                        ("TwoFoldDraws", "maybe")]:
        with pytest.raises(ValueError):
            eng.set_option(name, value)
    with pytest.raises(ValueError):
        Engine(MaterialEvaluator(), Bogus=3)


def net_on(attributes: BackendAttributes):
    """A stand-in network whose backend states `attributes`."""
    class Net(MaterialEvaluator):
        class backend:
            @staticmethod
            def attributes():
                return attributes
    return Net()


def test_threads_and_minibatch_come_from_the_backend():
    """Threads 0 and MinibatchSize 0 ask the backend (lc0's BackendAttributes):
    a GPU's search gathers twice its recommended batch, at most its largest;
    an evaluator that is no backend gets the cpu backend's (1 thread, 7)."""
    gpu = BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=3,
                            recommended_batch_size=264, maximum_batch_size=1024)
    assert Engine(net_on(gpu)).search_threads() == 3
    assert Engine(net_on(gpu)).minibatch_size() == 528
    small = BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=3,
                              recommended_batch_size=264, maximum_batch_size=300)
    assert Engine(net_on(small)).minibatch_size() == 300
    on_cpu = BackendAttributes(runs_on_cpu=True, suggested_num_search_threads=1,
                               recommended_batch_size=7, maximum_batch_size=1024)
    assert Engine(net_on(on_cpu)).minibatch_size() == 7
    # More threads than batches the network can use at once are not started
    # (MaxBatchesInFlight, 0: the suggestion); asked for, they are.
    assert Engine(net_on(gpu), Threads=5, MinibatchSize=64).search_threads() == 3
    assert Engine(net_on(gpu), Threads=5, MaxBatchesInFlight=8).search_threads() == 5
    assert Engine(net_on(gpu), Threads=2).search_threads() == 2
    assert Engine(net_on(gpu), Threads=5, MinibatchSize=64).minibatch_size() == 64
    assert Engine(MaterialEvaluator()).search_threads() == 1
    assert Engine(MaterialEvaluator()).minibatch_size() == 7        # lc0 eigen's 7


def test_engine_warms_a_gpu_backend_for_its_batches():
    """A backend with warm_up() (the GPU's: its products' algorithms timed
    before the first search) is asked at creation for the largest batch a
    search sends (minibatch plus prefetch), and again at a search after
    MinibatchSize grows."""
    gpu = BackendAttributes(runs_on_cpu=False, suggested_num_search_threads=1,
                            recommended_batch_size=264, maximum_batch_size=1024)
    net = net_on(gpu)
    asked = []
    net.backend.warm_up = staticmethod(lambda largest, slots: asked.append(largest))
    engine = Engine(net, MaxPrefetch=32)
    assert asked == [528 + 32]
    engine.set_option("MinibatchSize", 600)
    engine.search(chess.Board(), nodes=20)
    assert asked == [560, 632]
    Engine(net, warm=False).search(chess.Board(), nodes=20)    # an options holder: never warms
    assert asked == [560, 632]


def test_result_shape():
    result = Engine(MaterialEvaluator(), MultiPV=2, SmartPruningFactor=0).search(
        chess.Board(), nodes=120)
    assert isinstance(result, SearchResult)
    assert result.best_move in chess.Board().legal_moves
    assert result.pv[0] == result.best_move and result.ponder_move == result.pv[1]
    assert abs(sum(result.wdl) - 1) < 1e-6 and result.nodes >= 120
    assert len(result.lines) == 2 and all(isinstance(x, SearchInfo) for x in result.lines)
    info = result.lines[0]
    assert info.score_cp is not None and info.mate is None and sum(info.wdl_permille) == 1000
    assert abs(sum(info.wdl) - 1) < 1e-9 and all(0 <= x <= 1 for x in info.wdl)   # one unit with result.wdl
    assert info.seldepth >= info.depth >= 1
    assert set(result.stats) == set(chess.Board().legal_moves)
    assert all(isinstance(s, MoveStats) for s in result.stats.values())
    assert abs(sum(s.p for s in result.stats.values()) - 1) < 0.01


def test_set_network_drops_the_tree():
    eng = Engine(MaterialEvaluator(), SmartPruningFactor=0)
    eng.search(chess.Board(), nodes=50)
    assert eng._tree is not None
    eng.set_network(MaterialEvaluator())
    assert eng._tree is None


def test_maia_through_the_real_network(maia_path):
    from lc0_rocm.network import load_network
    net = load_network(str(maia_path), backend="cpu")
    eng = Engine(net)
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    result = eng.search(board, nodes=60)
    assert result.best_move == chess.Move.from_uci("a1a8") and result.lines[0].mate == 1
    result = eng.search(chess.Board(), nodes=20)
    assert result.best_move in chess.Board().legal_moves


@pytest.mark.parametrize("preset, input_format", [("tiny-resnet", 1), ("tiny-resnet", 3),
                                                  ("tiny-resnet", 5), ("tiny-attn", None)])
def test_generated_nets_of_every_input_family(make_test_net, preset, input_format):
    """Search runs on classical and canonical inputs (fast path or encoder
    path); priors at the root equal a softmax of the net's own policy."""
    import numpy as np
    from lc0_rocm import encoder
    from lc0_rocm.network import load_network
    shape = {} if input_format is None else {"input_format": input_format}
    net = load_network(str(make_test_net(preset, **shape)), backend="cpu")
    board = chess.Board("8/8/3k4/8/8/8/1K6/6q1 b - - 0 60")     # pawnless: canonical transforms
    result = Engine(net).search(board, nodes=30)
    assert result.best_move in board.legal_moves
    root = Engine(net).search(board, nodes=1).stats
    policy, _, _ = net.forward(encoder.encode(board, net.input_format)[None])
    moves, indices = encoder.policy_indices(board, net.input_format)
    logits = policy[0, indices] / 1.359
    expected = np.exp(logits - logits.max())
    expected /= expected.sum()
    for move, p in zip(moves, expected):
        assert abs(root[move].p - p) < 2e-3 + 2e-3 * p
