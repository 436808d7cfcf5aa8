"""Parity of the numpy convolution-body forward pass (cpu_resnet) with lc0
v0.32.1's eigen backend, for maia-1900 and a generated net of every
convolution-body preset, over varied positions.

The model is fed lc0's own input planes (oracle.lc0_planes), which isolates
the network math from our encoder; test_end_to_end_with_our_encoder runs
the same nets on planes from our encoder.
"""
from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm import encoder
from lc0_rocm.backends import create
from lc0_rocm.backends.cpu_resnet import ResNetModel, fold_conv, toom_cook_matrices
from lc0_rocm.makenet import PRESETS, save_net
from lc0_rocm.makenet import resnet as _resnet_presets  # noqa: F401  (registers the presets)
from lc0_rocm.weights import Node, WeightsError, load_weights
from oracle import game_state, lc0_outputs, lc0_planes
from resnet_positions import varied_positions

POLICY_TOL = 1e-4
WDL_TOL = 1e-4
MOVES_LEFT_TOL = 1e-3
RESNET_PRESETS = ["tiny-resnet", "tiny-resnet-classical", "tiny-resnet-mish", "resnet-se"]


@pytest.fixture(scope="module")
def boards():
    return varied_positions()


@pytest.fixture(scope="module")
def resnet_net(tmp_path_factory):
    """resnet_net(preset, seed=0) -> path; builds through makenet.resnet only,
    so these tests do not depend on the attention presets' module."""
    root = tmp_path_factory.mktemp("resnet-nets")
    cache = {}

    def make(preset, seed=0):
        if (preset, seed) not in cache:
            net = PRESETS[preset](np.random.default_rng(seed))
            cache[preset, seed] = save_net(net, root / f"{preset}-{seed}.pb.gz")
        return cache[preset, seed]

    return make


def legal_indices(net_path, board):
    """lc0's policy indices of the legal moves (classical input formats)."""
    return np.array(game_state(board).policy_indices(), dtype=np.int64)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def check_parity(net_path, boards, planes, algorithm=None):
    weights = load_weights(net_path)
    model = ResNetModel(weights) if algorithm is None else ResNetModel(weights, algorithm=algorithm)
    policy, wdl, moves_left = model.forward(planes)
    assert policy.dtype == wdl.dtype == moves_left.dtype == np.float32
    assert policy.shape == (len(boards), 1858) and wdl.shape == (len(boards), 3)
    expected = lc0_outputs(net_path, boards)
    for i, (board, (ref_logits, ref_wdl, ref_ml)) in enumerate(zip(boards, expected)):
        where = f"position {i} ({board.fen()}, {len(board.move_stack)} moves)"
        np.testing.assert_allclose(policy[i], ref_logits, rtol=0, atol=POLICY_TOL, err_msg=where)
        idx = legal_indices(net_path, board)
        np.testing.assert_allclose(softmax(policy[i][idx]), softmax(ref_logits[idx]),
                                   rtol=0, atol=POLICY_TOL, err_msg=where)
        np.testing.assert_allclose(wdl[i], ref_wdl, rtol=0, atol=WDL_TOL, err_msg=where)
        assert abs(moves_left[i] - ref_ml) <= MOVES_LEFT_TOL, where
    return policy, wdl, moves_left


def oracle_planes(net_path, boards):
    return np.stack([lc0_planes(net_path, b) for b in boards])


# ------------------------------------------------------------------ parity
@pytest.mark.parametrize("algorithm", ResNetModel.ALGORITHMS)
def test_maia_matches_lc0(maia_path, boards, algorithm):
    assert len(boards) >= 50
    policy, wdl, _ = check_parity(maia_path, boards, oracle_planes(maia_path, boards), algorithm)
    # A real net: sharp but not one-hot policies, WDL rows that sum to 1.
    np.testing.assert_allclose(wdl.sum(axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("preset", RESNET_PRESETS)
def test_generated_net_matches_lc0(preset, resnet_net, boards):
    path = resnet_net(preset)
    policy, wdl, moves_left = check_parity(path, boards, oracle_planes(path, boards))
    check_non_degenerate(path, boards, policy, wdl, moves_left,
                         classical=(preset == "tiny-resnet-classical"))


def check_non_degenerate(path, boards, policy, wdl, moves_left, classical=False):
    """Finite outputs, policy not one-hot, WDL not saturated, moves-left alive."""
    assert np.isfinite(policy).all() and np.isfinite(wdl).all()
    top = np.array([softmax(policy[i][legal_indices(path, b)]).max() for i, b in enumerate(boards)])
    assert top.max() < 0.99 and np.median(top) < 0.5, top
    assert wdl.max() < 0.99
    if classical:  # classical value head, no moves-left head
        assert (wdl[:, 1] == 0).all() and (moves_left == 0).all()
    else:
        assert wdl.min() > 0.01
        assert (moves_left > 0).all() and moves_left.std() > 0


def test_old_file_without_network_format_matches_lc0(tmp_path, boards):
    """Files from before NetworkFormat existed: lc0 reads them as classical
    policy and value heads on a plain residual body."""
    from lc0_rocm._proto import net_pb2
    net = PRESETS["tiny-resnet-classical"](np.random.default_rng(4))
    net.format.ClearField("network_format")
    path = save_net(net, tmp_path / "old-format.pb.gz")
    assert load_weights(path).format.network != net_pb2.NetworkFormat.NETWORK_UNKNOWN
    check_parity(path, boards[:20], oracle_planes(path, boards[:20]))




def test_attention_policy_on_conv_body_matches_lc0(resnet_net, boards):
    path = resnet_net("tiny-resnet-attnpolicy")
    check_non_degenerate(path, boards, *check_parity(path, boards, oracle_planes(path, boards)))


@pytest.mark.parametrize("net", ["maia"] + RESNET_PRESETS + ["tiny-resnet-attnpolicy"])
def test_end_to_end_with_our_encoder(net, maia_path, resnet_net, boards):
    """Planes from our encoder instead of lc0's: the whole cpu path."""
    path = maia_path if net == "maia" else resnet_net(net)
    planes = np.asarray(encoder.encode_batch(boards), dtype=np.float32)
    check_parity(path, boards, planes)


# ------------------------------------------------------------ behaviour
def test_convolution_algorithms_agree(resnet_net, boards):
    """im2col (direct) and both Winograd variants compute the same convolutions."""
    weights = load_weights(resnet_net("resnet-se"))
    planes = oracle_planes(resnet_net("resnet-se"), boards[:16])
    outputs = {a: ResNetModel(weights, algorithm=a).forward(planes) for a in ResNetModel.ALGORITHMS}
    for algorithm, got in outputs.items():
        for g, want in zip(got, outputs["im2col"]):
            np.testing.assert_allclose(g, want, rtol=0, atol=5e-5, err_msg=algorithm)
    with pytest.raises(ValueError, match="algorithm"):
        ResNetModel(weights, algorithm="fft")


def test_winograd_matrices_compute_a_correlation():
    """F(m, 3) in 1-D: A^T [(G g) * (B^T d)] == the 3-tap correlation of d with g."""
    rng = np.random.default_rng(5)
    for m in (2, 4):
        bt, g_mat, at = toom_cook_matrices(m)
        d, g = rng.standard_normal(m + 2), rng.standard_normal(3)
        expected = [d[i:i + 3] @ g for i in range(m)]
        np.testing.assert_allclose(at @ ((g_mat @ g) * (bt @ d)), expected, atol=1e-12)

def test_batch_sizes_and_buffer_reuse_give_the_same_rows(maia_path, boards):
    model = ResNetModel(load_weights(maia_path))
    planes = oracle_planes(maia_path, boards[:12])
    full = model.forward(planes)
    for n in (1, 5, 12, 3):  # switching batch sizes reuses/evicts buffers
        part = model.forward(planes[:n])
        for got, want in zip(part, full):
            np.testing.assert_allclose(got, want[:n], rtol=0, atol=2e-5)
    again = model.forward(planes)
    for got, want in zip(again, full):
        np.testing.assert_array_equal(got, want)
    # Outputs are fresh arrays, not views of reused buffers.
    policy_before = again[0].copy()
    model.forward(planes[::-1].copy())
    np.testing.assert_array_equal(again[0], policy_before)


def test_batch_larger_than_a_chunk(resnet_net, boards, monkeypatch):
    from lc0_rocm.backends import cpu_resnet
    path = resnet_net("tiny-resnet")
    model = ResNetModel(load_weights(path))
    planes = oracle_planes(path, boards)
    whole = model.forward(planes)
    monkeypatch.setattr(cpu_resnet, "MAX_CHUNK", 7)
    chunked = model.forward(planes)
    for got, want in zip(chunked, whole):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-5)


def test_concurrent_calls_from_threads_give_the_same_results(resnet_net, boards):
    from concurrent.futures import ThreadPoolExecutor
    path = resnet_net("tiny-resnet")
    model = ResNetModel(load_weights(path))
    planes = oracle_planes(path, boards[:8])
    inputs = [planes[i:i + 4] for i in range(0, 8, 4)] * 8
    expected = [model.forward(x) for x in inputs]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(model.forward, inputs))
    for got, want in zip(results, expected):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_empty_batch(maia_path):
    model = ResNetModel(load_weights(maia_path))
    policy, wdl, moves_left = model.forward(np.zeros((0, 112, 8, 8), np.float32))
    assert policy.shape == (0, 1858) and wdl.shape == (0, 3) and moves_left.shape == (0,)


def test_cpu_backend_uses_resnet_model(maia_path, boards):
    weights = load_weights(maia_path)
    backend = create("cpu", weights)
    assert isinstance(backend.model, ResNetModel)
    planes = oracle_planes(maia_path, boards[:4])
    for got, want in zip(backend.forward(planes), ResNetModel(weights).forward(planes)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shape", [(112, 8, 8), (2, 111, 8, 8), (2, 112, 64)])
def test_bad_plane_shapes_are_rejected(maia_path, shape):
    model = ResNetModel(load_weights(maia_path))
    with pytest.raises(ValueError, match="planes must have shape"):
        model.forward(np.zeros(shape, np.float32))


def test_tensor_size_mismatch_is_a_weights_error(resnet_net):
    weights = load_weights(resnet_net("tiny-resnet"))
    conv = weights.net.residual[1].conv1
    conv.weights = conv.weights[:-9]
    with pytest.raises(WeightsError, match=r"residual\[1\]\.conv1\.weights"):
        ResNetModel(weights)


def test_missing_head_is_a_weights_error(resnet_net):
    weights = load_weights(resnet_net("tiny-resnet"))
    weights.net.ip1_val_w = None
    with pytest.raises(WeightsError, match="ip1_val_w"):
        ResNetModel(weights)


def test_batch_norm_folding_matches_unfolded_batch_norm():
    """w' x + b' equals gamma * (w x + b - mean) / sqrt(var + 1e-5) + beta."""
    rng = np.random.default_rng(3)
    k, c = 4, 3
    block = Node(weights=rng.standard_normal(k * c * 9).astype(np.float32),
                 biases=rng.standard_normal(k).astype(np.float32),
                 bn_means=rng.standard_normal(k).astype(np.float32),
                 bn_stddivs=rng.uniform(0.1, 2, k).astype(np.float32),
                 bn_gammas=rng.uniform(0.5, 1.5, k).astype(np.float32),
                 bn_betas=rng.standard_normal(k).astype(np.float32))
    w, b = fold_conv(block, "test", c, 3)
    x = rng.standard_normal((c, 3, 3)).astype(np.float32)  # one 3x3 window
    raw = block.weights.reshape(k, c, 3, 3).reshape(k, -1) @ x.ravel() + block.biases
    expected = block.bn_gammas * (raw - block.bn_means) / np.sqrt(block.bn_stddivs + 1e-5) + block.bn_betas
    np.testing.assert_allclose(w.reshape(k, -1) @ x.ravel() + b, expected, rtol=1e-5, atol=1e-5)
