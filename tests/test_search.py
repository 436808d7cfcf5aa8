"""Search core with a deterministic fake network: rules, terminals, tree
invariants, limits, reuse. (Agreement with lc0 itself: test_search_lc0.py.)"""
from __future__ import annotations

import math

import chess
import numpy as np
import pytest

from lc0_rocm.engine import Engine
from lc0_rocm.search import fastmath
from lc0_rocm.search.positions import PositionWalker, has_mating_material
from lc0_rocm.search.score import mate_score, score_cp, wdl_permille
from lc0_rocm.search.tree import TWO_FOLD

from search_fakes import MaterialEvaluator

DETERMINISTIC = {"SmartPruningFactor": 0}


def engine(**options) -> Engine:
    return Engine(MaterialEvaluator(), **{**DETERMINISTIC, **options})


def check_tree(tree) -> None:
    """Invariants after a finished search: nothing in flight; every
    expanded non-terminal node has n = 1 + sum of its children's n."""
    assert all(x == 0 for x in tree.n_in_flight)
    for node in range(len(tree)):
        if tree.n[node] == 0 or tree.terminal[node] or not tree.is_expanded(node):
            continue
        children = sum(tree.n[tree.e_child[j]] for j in tree.edges(node) if tree.e_child[j] >= 0)
        assert tree.n[node] == 1 + children, node


# --- lc0's float approximations -------------------------------------------

def test_fast_exp_is_close_to_exp_and_exact_at_zero():
    x = np.linspace(-40, 0, 401).astype(np.float32)
    rel = fastmath.fast_exp(x) / np.exp(x.astype(np.float64))
    assert np.all(np.abs(rel - 1) < 3e-3)
    assert fastmath.fast_exp(np.float32(0)) == 1.0
    assert fastmath.fast_exp(np.float32(-200)) == 0.0


def test_fast_exp_of_one_value_equals_the_float32_array_path():
    # fast_logistic's scalar path emulates float32 in doubles: bit for bit
    # the array path's numbers, negative wholes, the -126 cut and zero included.
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-90, 40, 20000), np.arange(-130, 30, 0.125),
                        [0.0, -0.0, 1e-30, -1e-30, -87.336, -87.337]]).astype(np.float32)
    expected = fastmath.fast_exp(x)
    got = np.array([fastmath._fast_exp_scalar(float(v)) for v in x], dtype=np.float64)
    assert np.array_equal(got, expected.astype(np.float64))
    for a in rng.uniform(-25, 25, 2000):
        old = 1.0 if a > 20 else 0.0 if a < -20 else 1.0 / (1.0 + float(fastmath.fast_exp(np.float32(-a))))
        assert fastmath.fast_logistic(float(a)) == old


def test_fast_log_matches_log_within_lc0_error():
    for a in (1.0, 1.0001, 1.5, 2.0, 3.7, 1000.0):
        assert abs(fastmath.fast_log(a) - math.log(a)) < 6e-3
    assert fastmath.fast_log(2.0) == pytest.approx(math.log(2.0), abs=1e-12)


def test_prior_storage_rounds_like_lc0():
    p = np.array([1.0, 0.5, 0.4424, 0.1, 0.0], dtype=np.float32)
    stored = fastmath.compress_priors(p)
    assert stored[0] == 1.0 and stored[1] == 0.5
    assert np.all(np.abs(stored[:4] - p[:4]) <= p[:4] * 2 ** -11 + 1e-12)
    assert 0 < stored[4] < 1e-9            # lc0 returns ~4.7e-10 for a zero prior
    keys = fastmath.compress_key(np.array([0.3, 0.2, 0.2001], np.float32))
    assert keys[0] > keys[2] >= keys[1]


def test_policy_softmax_sums_to_one_and_respects_temperature():
    logits = np.array([2.0, 1.0, 0.0], dtype=np.float32)
    p1 = fastmath.policy_softmax(logits, 1.0)
    p2 = fastmath.policy_softmax(logits, 1 / 1.359)
    assert p1.sum() == pytest.approx(1.0, abs=1e-6) and p2.sum() == pytest.approx(1.0, abs=1e-6)
    assert p2[0] < p1[0]                   # a higher temperature flattens
    assert np.allclose(p1, np.exp(logits) / np.exp(logits).sum(), rtol=5e-3)


# --- positions and rules ---------------------------------------------------

def test_repetitions_and_cycle_like_lc0():
    board = chess.Board()
    walker = PositionWalker(board)
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        walker.push(chess.Move.from_uci(uci))
    assert walker.repetitions[-1] == 1 and walker.cycle[-1] == 4
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        walker.push(chess.Move.from_uci(uci))
    assert walker.repetitions[-1] == 2
    walker.push(chess.Move.from_uci("e2e4"))          # zeroing move
    assert walker.repetitions[-1] == 0
    for _ in range(9):
        walker.pop()
    assert walker.board == chess.Board() and walker.depth == 0


def test_mating_material_like_lc0():
    assert not has_mating_material(chess.Board("8/8/8/4k3/8/8/8/4K3 w - - 0 1"))
    assert not has_mating_material(chess.Board("8/8/8/4k3/8/8/8/4KN2 w - - 0 1"))
    assert has_mating_material(chess.Board("8/8/8/4k1n1/8/8/8/4KN2 w - - 0 1"))
    assert not has_mating_material(chess.Board("8/8/8/4kb2/8/8/8/3BK3 w - - 0 1"))  # same colour
    assert has_mating_material(chess.Board("8/8/8/4k1b1/8/8/8/3BK3 w - - 0 1"))
    assert has_mating_material(chess.Board("8/8/8/4k3/8/8/P7/4K3 w - - 0 1"))


# --- terminals and certainty ----------------------------------------------

def test_finds_mate_in_one_and_reports_it():
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    result = engine(SmartPruningFactor=1.33).search(board, nodes=400)
    assert result.best_move == chess.Move.from_uci("a1a8")
    assert result.lines[0].mate == 1
    assert result.nodes < 400              # a proven win stops the search


def test_mated_side_sees_negative_mate():
    # Black's only move Kg8 allows Qb8#.
    board = chess.Board("7k/8/6K1/8/8/8/8/1Q6 b - - 0 1")
    result = engine().search(board, nodes=200)
    assert result.best_move is not None
    assert result.lines[0].mate is not None and result.lines[0].mate < 0


def test_no_legal_moves_gives_no_bestmove():
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    result = engine().search(stalemate, nodes=10)
    assert result.best_move is None and result.wdl == (0.0, 1.0, 0.0)
    mated = chess.Board("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1")
    result = engine().search(mated, nodes=10)
    assert result.best_move is None and result.wdl == (0.0, 0.0, 1.0)


def test_single_legal_move_stops_at_once_with_smart_pruning():
    board = chess.Board("7k/8/8/8/8/8/6q1/7K w - - 0 1")     # Kxg2 only
    result = engine(SmartPruningFactor=1.33).search(board, nodes=1000)
    assert result.best_move == chess.Move.from_uci("h1g2")
    assert result.nodes <= 2


def test_two_fold_repetition_inside_tree_is_a_draw():
    # White is a queen down; repeating with Qh6+ ... is the only way out. The
    # tree must mark a repetition 4+ plies deep as a two-fold draw.
    board = chess.Board("6k1/5p1p/6pQ/8/8/8/8/q5K1 w - - 0 1")
    eng = engine()
    eng.search(board, nodes=600)
    tree = eng._tree
    assert TWO_FOLD in tree.terminal
    check_tree(tree)


def test_fifty_move_rule_and_insufficient_material_are_terminal_in_tree():
    board = chess.Board("8/8/8/4k3/8/8/3n4/4K3 w - - 99 120")
    eng = engine()
    result = eng.search(board, nodes=50)
    tree = eng._tree
    for j in tree.edges(0):
        c = tree.e_child[j]
        assert c < 0 or tree.n[c] == 0 or tree.terminal[c]    # 50-move draws
    assert abs(result.q) < 1e-9


class FakeTablebase:
    """Says every 3-piece position with a white queen is a win for White."""
    max_pieces = 3

    def __init__(self):
        self.probes = 0

    def get_wdl(self, board):
        self.probes += 1
        if chess.popcount(board.occupied) == 3 and board.queens & board.occupied_co[chess.WHITE]:
            return 2 if board.turn == chess.WHITE else -2
        return None


def test_tablebase_probes_inside_the_tree():
    # White Qxb7 captures into a 3-piece position the "tablebase" calls won.
    board = chess.Board("8/1r6/8/8/8/6k1/1Q6/K7 w - - 0 1")
    eng = engine(SmartPruningFactor=1.33)
    tb = FakeTablebase()
    eng.set_tablebase(tb)
    result = eng.search(board, nodes=300)
    assert tb.probes > 0 and result.lines[0].tbhits > 0
    assert result.best_move == chess.Move.from_uci("b2b7")
    assert result.lines[0].mate is not None and result.lines[0].mate > 100   # TB win


# --- limits, batching, invariants -----------------------------------------

def test_node_limit_and_tree_invariants():
    eng = engine()
    result = eng.search(chess.Board(), nodes=300)
    assert 300 <= result.nodes < 300 + 64
    check_tree(eng._tree)
    assert sum(s.visits for s in result.stats.values()) == eng._tree.n[0] - 1


def test_search_is_deterministic_without_smart_pruning():
    a = engine().search(chess.Board(), nodes=200)
    b = engine().search(chess.Board(), nodes=200)
    assert a.best_move == b.best_move and a.nodes == b.nodes
    assert {m: s.visits for m, s in a.stats.items()} == {m: s.visits for m, s in b.stats.items()}


def test_minibatches_respect_the_size_plus_prefetch():
    fake = MaterialEvaluator()
    Engine(fake, MinibatchSize=7, MaxPrefetch=0, **DETERMINISTIC).search(chess.Board(), nodes=200)
    assert max(fake.batches) <= 7
    fake = MaterialEvaluator()
    Engine(fake, MinibatchSize=7, **DETERMINISTIC).search(chess.Board(), nodes=200)
    assert max(fake.batches) <= 32 and max(fake.batches) > 7    # lc0's MaxPrefetch 32


def test_searchmoves_restricts_the_root():
    board = chess.Board()
    only = [chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h3")]
    result = engine().search(board, nodes=100, searchmoves=only)
    assert result.best_move in only
    assert all(s.visits == 0 for m, s in result.stats.items() if m not in only)


def test_multipv_lines_are_ordered_like_lc0():
    result = engine(MultiPV=3).search(chess.Board(), nodes=200)
    assert [line.multipv for line in result.lines] == [1, 2, 3]
    visits = [result.stats[line.move].visits for line in result.lines]
    assert visits == sorted(visits, reverse=True)
    assert result.lines[0].move == result.best_move
    for line in result.lines:
        board = chess.Board()
        for move in line.pv:
            assert move in board.legal_moves
            board.push(move)


def test_tree_is_reused_when_the_game_continues():
    eng = engine(MaxPrefetch=0, MinibatchSize=7)
    board = chess.Board()
    first = eng.search(board, nodes=300)
    board.push(first.best_move)
    board.push(first.ponder_move)
    reused = eng._tree_for(board)            # what the next search starts from
    n_reused = reused.n[0]
    assert n_reused > 0
    second = eng.search(board, nodes=n_reused + 50)
    assert second.nodes >= n_reused + 50
    assert second.nn_evals <= 50 + 7         # the reused visits were not recomputed
    check_tree(eng._tree)
    eng.new_game()
    assert eng._tree is None


def test_stop_event_and_movetime():
    import threading
    stop = threading.Event()
    stop.set()
    result = engine().search(chess.Board(), stop=stop)
    assert result.best_move is not None            # at least one iteration
    result = engine().search(chess.Board(), movetime=0.2)
    assert result.best_move is not None and result.time < 2.0


def test_depth_and_mate_limits():
    result = engine().search(chess.Board(), depth=3)
    assert result.depth >= 3 and result.nodes < 5000
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    result = engine().search(board, mate=1)
    assert result.lines[0].mate == 1


def test_temperature_samples_among_visited_moves():
    import random
    random.seed(1)
    def best_moves(eng, times):
        found = set()
        for _ in range(times):
            eng.new_game()
            found.add(eng.search(chess.Board(), nodes=60).best_move)
        return found
    assert len(best_moves(engine(Temperature=10.0), 12)) > 1     # T = 10 spreads the choice
    # From move 1 on TempEndgame (0) applies: always the most visited move.
    assert len(best_moves(engine(Temperature=10.0, TempCutoffMove=1), 3)) == 1


def test_dirichlet_noise_changes_root_priors_only():
    plain = engine().search(chess.Board(), nodes=1)
    noisy = engine(DirichletNoiseEpsilon=0.5).search(chess.Board(), nodes=1)
    diffs = [abs(plain.stats[m].p - noisy.stats[m].p) for m in plain.stats]
    assert max(diffs) > 0.01
    assert abs(sum(s.p for s in noisy.stats.values()) - 1) < 0.01


def test_nodes_as_playouts_kld_and_nps_limit():
    eng = engine(NodesAsPlayouts=True, MaxPrefetch=0)
    board = chess.Board()
    first = eng.search(board, nodes=100)
    again = eng.search(board, nodes=100)          # same position: the tree is reused
    assert again.nodes >= first.nodes + 100
    kld = engine(SmartPruningFactor=1.33, MinimumKLDGainPerNode=0.5, KLDGainAverageInterval=50)
    assert kld.search(chess.Board(), nodes=2000).nodes < 300
    import time
    start = time.monotonic()
    engine(NpsLimit=400).search(chess.Board(), nodes=200)
    assert time.monotonic() - start > 0.3


def test_two_thread_pipeline_keeps_the_tree_consistent():
    eng = engine(Threads=2, SmartPruningFactor=1.33)
    board = chess.Board()
    for _ in range(6):
        result = eng.search(board, nodes=300)
        check_tree(eng._tree)
        assert result.best_move in board.legal_moves and result.nodes >= 1
        board.push(result.best_move)
    mate = chess.Board("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    assert engine(Threads=2).search(mate, nodes=200).best_move == chess.Move.from_uci("a1a8")


def test_info_callback_sees_final_lines():
    seen = []
    engine(MultiPV=2).search(chess.Board(), nodes=100, on_info=seen.append)
    assert [i.multipv for i in seen[-2:]] == [1, 2]
    assert seen[-1].nodes >= 100


def test_bad_arguments_are_rejected():
    eng = engine()
    with pytest.raises(ValueError):
        eng.search(chess.Board(), nodes=0)
    with pytest.raises(ValueError):
        eng.search(chess.Board(), nodes=10, searchmoves=[chess.Move.from_uci("e2e5")])
    with pytest.raises(ValueError):
        eng.search(chess.Board())                  # no limit at all
    with pytest.raises(ValueError):
        eng.search(chess.Board("8/8/8/8/8/8/8/8 w - - 0 1"), nodes=10)
    with pytest.raises(TypeError):
        eng.search("startpos", nodes=10)


# --- score formatting --------------------------------------------------------

def test_network_scores_at_once_equal_the_scalar_score():
    """score.network_score_cp (eval-only analysis) equals score_cp(wl, d, wl)
    value by value: random WDLs, their float32 roundings, and the edges of
    WDLRescale's range (certain results, eps on either side, all draw)."""
    from lc0_rocm.search.score import network_score_cp
    rng = np.random.default_rng(5)
    wdl = rng.dirichlet([0.3, 0.3, 0.3], 20000)
    edges = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 0.5], [0.49995, 0.0001, 0.49995],
                      [0.9999, 0.00005, 0.00005], [0.99985, 0.0001, 0.00005], [1 / 3, 1 / 3, 1 / 3],
                      [0.0001, 0.9998, 0.0001], [0.00011, 0.99978, 0.00011]])
    wdl = np.vstack([wdl, wdl.astype(np.float32).astype(np.float64), edges])
    w, d, l = wdl.T
    expected = [score_cp(a - c, b, a - c) for a, b, c in zip(w.tolist(), d.tolist(), l.tolist())]
    assert network_score_cp(w - l, d) == expected
    assert network_score_cp(np.zeros(0), np.zeros(0)) == []


def test_scores_like_lc0():
    assert mate_score(1.0, 0.0) == 1
    assert mate_score(1.0, 2.0) == 2
    assert mate_score(-1.0, 1.0) == -1
    assert wdl_permille(0.0, 1.0) == (0, 1000, 0)
    assert sum(wdl_permille(0.3, 0.4)) == 1000
    assert score_cp(0.0, 0.5, 0.0) == 0
    assert score_cp(0.2, 0.3, 0.2) > 0 > score_cp(-0.2, 0.3, -0.2)
    assert score_cp(0.5, 0.0, 0.5, "centipawn") == int(90 * math.tan(1.5637541897 * 0.5))


def test_contempt_settings_like_lc0():
    from lc0_rocm.search.contempt import contempt_elo, rescale_params, wdl_rescale
    from lc0_rocm.search.params import SearchParams
    assert contempt_elo("", "", 12.0) == 12.0
    assert contempt_elo("Stockfish 16", "50,stockfish=200,komodo=100", 0.0) == 200.0
    assert contempt_elo("Komodo", "50,stockfish=200", 0.0) == 50.0
    with pytest.raises(ValueError):
        contempt_elo("", "abc", 0.0)
    with pytest.raises(ValueError):
        engine().set_option("Contempt", "x=y=z")
    params = SearchParams()
    assert rescale_params(params) == (1.0, 0.0)          # defaults: no rescaling
    params.set("Contempt", "100")
    ratio, diff = rescale_params(params)
    assert ratio == 1.0 and diff > 0
    v, d, mu = wdl_rescale(0.0, 0.5, 1.0, diff, 1.0, False, 1.4)
    assert v > 0 and d < 0.5                             # contempt: the draw looks worse
