"""Native GPU backend, attention bodies: parity with the numpy reference.

The GPU tests (marked `gpu`) build the native library, run a generated net of
every attention preset in fp32 and fp16 at batch sizes 1, 7, 64, 256 and
1024 with NaN-poisoned output buffers, and compare policy, WDL and moves-left
with the `cpu` backend (relative error = ||gpu - cpu|| / ||cpu||: fp32 1e-4,
fp16 1e-2). They skip, saying why, where no GPU toolchain or GPU is present.
The CPU tests check the contract between native.py's tensor names and the
attention body (native/src/attention.h) and the policy slot rule that
native/src/attention/heads.cpp generates; with HIP-CPU at hand (LC0ROCM_HIPCPU)
one also runs the warp-level kernels on the CPU with 64-wide warps.
"""
from __future__ import annotations

import pathlib
import re
import threading

import numpy as np
import pytest

import hip_cpu
from lc0_rocm import tables
from lc0_rocm.weights import load_weights

ATTENTION_PRESETS = ["tiny-attn", "tiny-bt", "t82", "bt4"]
BIG_PRESETS = {"t82", "bt4"}
BATCHES = [1, 7, 64, 256, 1024]
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2}


# ---------------------------------------------------------------- CPU tests

def rule_policy_slots() -> list[int]:
    """The rule attention/heads.cpp uses: queen-like and knight moves in (from, to)
    order, then q/r/b promotions by from file, to file, piece."""
    slots = []
    for frm in range(64):
        for to in range(64):
            dr, df = abs(to // 8 - frm // 8), abs(to % 8 - frm % 8)
            if frm != to and (dr == 0 or df == 0 or dr == df or {dr, df} == {1, 2}):
                slots.append(frm * 64 + to)
    for from_file in range(8):
        for to_file in range(max(0, from_file - 1), min(7, from_file + 1) + 1):
            for piece in range(3):
                slots.append(4096 + from_file * 24 + to_file * 3 + piece)
    return slots


def test_policy_slot_rule_matches_tables():
    assert rule_policy_slots() == [int(i) for i in tables.ATTN_POLICY_GATHER]


# What attention/*.cpp read, for a net with smolgen; PE_DENSE adds the rest.
BODY_NAMES = ["ip_emb_w", "ip_emb_b", "smolgen_w", "meta.headcount",
              "encoder.0.mha.q_w", "encoder.0.mha.k_b", "encoder.0.mha.dense_w",
              "encoder.0.ln1_gammas", "encoder.0.ln2_betas", "encoder.0.ffn.dense2_b",
              "encoder.0.mha.smolgen.compress", "encoder.0.mha.smolgen.dense1_w",
              "encoder.0.mha.smolgen.ln2_gammas",
              "policy_head.ip_pol_w", "policy_head.ip2_pol_b", "policy_head.ip3_pol_w",
              "policy_head.ip4_pol_w", "map.attention_policy_gather",
              "value_head.ip_val_w", "value_head.ip1_val_b", "value_head.ip2_val_w"]
PE_DENSE_NAMES = ["ip_emb_preproc_w", "ip_emb_preproc_b", "ip_emb_ln_gammas", "ip_mult_gate",
                  "ip_add_gate", "ip_emb_ffn.dense1_w", "ip_emb_ffn.dense2_b", "ip_emb_ffn_ln_betas"]


@pytest.mark.parametrize("preset", ["tiny-attn", "tiny-bt"])
def test_native_tensor_names_cover_attention_body(make_test_net, preset):
    from lc0_rocm.backends import native_tensors

    weights = load_weights(make_test_net(preset))
    tensors = native_tensors.named_tensors(weights)
    want = BODY_NAMES + (PE_DENSE_NAMES if preset == "tiny-bt" else [])
    missing = [name for name in want if name not in tensors]
    assert not missing, f"native.py does not send {missing}"
    assert tensors["meta.headcount"].dtype == np.int32
    assert tensors["meta.headcount"][0] == weights.net.headcount
    # Heads are the resolved ones: multi-head files look like single-head ones.
    head = weights.policy_head()
    np.testing.assert_array_equal(tensors["policy_head.ip2_pol_w"], head.ip2_pol_w)
    if preset == "tiny-attn":  # this preset carries a policy encoder layer
        assert "policy_head.pol_encoder.0.mha.q_w" in tensors
        assert tensors["meta.pol_headcount"][0] > 0


ROOT = pathlib.Path(__file__).resolve().parent.parent


def hip_cpu_dialect(source: str) -> str:
    """A kernel file rewritten for HIP-CPU: `extern __shared__` arrays through
    HIP_DYNAMIC_SHARED (launches already go through gpu_launch, which is
    hipLaunchKernelGGL on AMD and HIP-CPU)."""
    return source.replace("extern __shared__ float shared[];", "HIP_DYNAMIC_SHARED(float, shared)")


def test_kernels_under_hip_cpu(tmp_path):
    """Layer norm, softmax, fused attention (rows of Q|K|V alone, and wider
    rows as where smolgen's compress shares the product), the MFMA fused
    attention of AMD CDNA and the WMMA one of RDNA 3 (their matrix
    instructions emulated by shuffles in each instruction's layout; RDNA's
    waves of 32 as halves of the warps) and head split/merge against C++
    references on the CPU, where HIP-CPU's warps are 64 wide."""
    hip_cpu.checkout()
    src = hip_cpu.copy_sources(tmp_path)
    for kernel in [*(src / "kernels").glob("attn_*.hip"), *(src / "kernels").glob("attn_*.h")]:
        kernel.write_text(hip_cpu_dialect(kernel.read_text()))
    hip_cpu.build_and_run(tmp_path, src, "native_attention_hipcpu.cpp")


# ---------------------------------------------------------------- GPU tests

def gpu_vendor() -> str:
    """'cuda' or 'rocm' for the first native backend usable here, else skip."""
    from lc0_rocm.backends import native

    reasons = []
    for prefix in ("cuda", "rocm"):
        ok, why = native.is_available(prefix)
        if ok:
            return prefix
        reasons.append(why)
    pytest.skip("no GPU backend here: " + "; ".join(reasons))


def sm90_half_backend(weights, **opts):
    """A half backend of `weights` for up to max(BATCHES) positions on a GPU
    with wgmma (compute capability 9.0, the library built as sm_90a), with
    backend options opts; skips elsewhere. The caller closes it."""
    from lc0_rocm import backends

    backend = backends.create(f"{gpu_vendor()}-fp16", weights, max_batch=max(BATCHES), **opts)
    arch = backend.device_info["arch"]
    if arch != "sm_90":
        backend.close()
        pytest.skip(f"no wgmma on {arch} (NVIDIA compute capability 9.0, built as sm_90a)")
    return backend


def random_planes(n: int, seed: int) -> np.ndarray:
    """Input planes with lc0's value ranges: sparse 0/1 piece planes, castling
    and side-to-move planes of ones or zeros, a rule-50 count, the ones plane."""
    rng = np.random.default_rng(seed)
    planes = (rng.random((n, 112, 64)) < 0.06).astype(np.float32)
    aux = rng.random((n, 8)) < 0.5
    planes[:, 104:112, :] = aux[:, :, None].astype(np.float32)
    planes[:, 109, :] = rng.integers(0, 100, size=(n, 1)).astype(np.float32)
    planes[:, 110, :] = 0.0
    planes[:, 111, :] = 1.0
    return planes.reshape(n, 112, 8, 8)


def poison(backend) -> None:
    """Hand NaN-filled output buffers to the library: an element it does not
    write stays NaN and fails the comparison."""
    def outputs(n):
        return (np.full((n, 1858), np.nan, np.float32), np.full((n, 3), np.nan, np.float32),
                np.full(n, np.nan, np.float32))
    backend._outputs = outputs


def rel_error(got, ref) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    denom = np.linalg.norm(ref)
    return float(np.linalg.norm(got - ref) / denom) if denom > 0 else float(np.linalg.norm(got))


def check_batches(backend, planes, ref, what: str, tolerance: float, batches=BATCHES) -> None:
    """Every batch of `batches` through `backend` against the reference: no
    NaN (the outputs are poisoned first), policy, WDL and moves-left within
    `tolerance`; `what` names the case in a failure."""
    poison(backend)
    for n in batches:
        got = backend.forward(planes[:n])
        for label, g, r in zip(("policy", "wdl", "moves_left"), got, ref):
            assert not np.isnan(g).any(), f"{what} n={n}: NaN in {label}"
            err = rel_error(g, r[:n])
            print(what, n, label, f"error {err:.2e}")
            assert err <= tolerance, f"{what} n={n}: {label} error {err:.2e}"


_REFERENCE: dict = {}


def reference(path, preset):
    """cpu backend outputs on 1024 positions (the big presets on 256 distinct
    positions, tiled), computed once per preset."""
    if preset not in _REFERENCE:
        from lc0_rocm import backends

        weights = load_weights(path)
        distinct = 256 if preset in BIG_PRESETS else max(BATCHES)
        planes = random_planes(distinct, seed=3)
        ref = backends.create("cpu", weights).forward(planes)
        reps = max(BATCHES) // distinct
        _REFERENCE[preset] = (weights, np.concatenate([planes] * reps),
                              tuple(np.concatenate([r] * reps) for r in ref))
    return _REFERENCE[preset]


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("preset", ATTENTION_PRESETS)
def test_parity_with_numpy_reference(make_test_net, preset, precision):
    from lc0_rocm import backends

    vendor = gpu_vendor()
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    name = vendor if precision == "fp32" else f"{vendor}-fp16"
    backend = backends.create(name, weights, max_batch=max(BATCHES))
    try:
        check_batches(backend, planes, ref, f"{preset} {name}", TOLERANCE[precision])
    finally:
        backend.close()


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ["tiny-attn", "t82"])
def test_mma_attention_matches_wmma(make_test_net, preset):
    """The fused attention on mma.sync fragments (head depth 16: tiny-attn,
    32: t82; native/docs/ATTENTION_FUSED.md) against the wmma kernel it replaces:
    both within the fp16 bound of the float reference, and not the same
    bits (float sums in another order round some probabilities the other
    way), which shows disable=mma_attention switches the kernel that runs."""
    from lc0_rocm import backends

    vendor = gpu_vendor()
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    n = 64
    got = {}
    probe = backends.create(f"{vendor}-fp16", weights, max_batch=1)
    arch = probe.device_info["arch"]
    probe.close()
    found = re.match(r"sm_(\d+)", arch)
    if found is None or int(found.group(1)) < 80:
        pytest.skip(f"no mma.sync kernel on {arch} (NVIDIA compute capability 8.0 on): both runs would be wmma")
    for wmma in ("0", "1"):
        opts = {"disable": "mma_attention"} if wmma == "1" else {}
        backend = backends.create(f"{vendor}-fp16", weights, max_batch=n, **opts)
        try:
            poison(backend)
            got[wmma] = backend.forward(planes[:n])
        finally:
            backend.close()
    for label, mma, wmma, r in zip(("policy", "wdl", "moves_left"), got["0"], got["1"], ref):
        for kernel, out in (("mma", mma), ("wmma", wmma)):
            assert not np.isnan(out).any(), f"{preset} {kernel}: NaN in {label}"
            err = rel_error(out, r[:n])
            print(preset, kernel, label, f"error {err:.2e}")
            assert err <= TOLERANCE["fp16"], f"{preset} {kernel} {label}: error {err:.2e}"
    assert not np.array_equal(got["0"][0], got["1"][0]), f"{preset}: the same policy bits from both kernels"


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["mma", "wmma"])
@pytest.mark.parametrize("preset", ["tiny-attn", "t82"])
def test_large_projection_biases(make_test_net, preset, kernel):
    """Q|K|V projection biases far above make-net's (~0.07): the mma.sync
    attention leaves K's bias out (it shifts a query row's scores by one
    amount, which softmax cancels) and adds V's to the output (each row of
    probabilities sums to one), where the wmma kernel adds all three to Q,
    K and V in shared memory.
    Both stay within the fp16 bound of the float reference, which adds
    every bias where the net says."""
    from lc0_rocm import backends

    vendor = gpu_vendor()
    weights = load_weights(make_test_net(preset, seed=1))
    rng = np.random.default_rng(5)
    for layer in weights.net.encoder:
        mha = layer.mha
        mha.q_b = (mha.q_b + 0.5 * rng.standard_normal(mha.q_b.shape)).astype(np.float32)
        mha.k_b = (mha.k_b + 4.0 * rng.standard_normal(mha.k_b.shape)).astype(np.float32)
        mha.v_b = (mha.v_b + 2.0 * rng.standard_normal(mha.v_b.shape)).astype(np.float32)
    n = 64
    planes = random_planes(n, seed=3)
    ref = backends.create("cpu", weights).forward(planes)
    opts = {"disable": "mma_attention"} if kernel == "wmma" else {}
    backend = backends.create(f"{vendor}-fp16", weights, max_batch=n, **opts)
    try:
        poison(backend)
        got = backend.forward(planes)
    finally:
        backend.close()
    for label, g, r in zip(("policy", "wdl", "moves_left"), got, ref):
        assert not np.isnan(g).any(), f"{preset} {kernel}: NaN in {label}"
        err = rel_error(g, r)
        print(preset, kernel, label, f"error {err:.2e}")
        assert err <= TOLERANCE["fp16"], f"{preset} {kernel} {label}: error {err:.2e}"


@pytest.mark.gpu
@pytest.mark.parametrize("half", ["1", "0"], ids=["half-sums", "float-sums"])
@pytest.mark.parametrize("preset", ["t82", "bt4"])
def test_sm90_products_match_reference(make_test_net, preset, half):
    """Our own sm_90 product (native/src/kernels/gemm_sm90.hip: wgmma fed by
    TMA, bias and activation in its epilogue, y written back by TMA stores)
    for the FFN's first product, from 64 rows on so that every batch takes
    it, with half sums on the wide ping-pong schedule (the default) or float
    sums on the cooperative one (half_sums=off); batch 7
    (448 rows) leaves the last 128-row tile part empty (TMA reads zeros past
    the end and its stores leave those rows out), from batch 64 on a block
    takes several tiles. Within the fp16 bound of the float reference at
    every batch, NaN-poisoned outputs; describe() shows the product ran.
    Skips off sm_90."""
    gpu_vendor()  # skips without a GPU, before the reference is computed
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    backend = sm90_half_backend(weights, force="sm90_gemm", half_sums="on" if half == "1" else "off")
    try:
        text = backend.describe(1)
        which = "the FFN's first products on sm_90 wgmma from 64 rows"
        assert which in text
        assert (f"{which} (half sums) (ping-pong on 128 x 256 tiles)" in text) == (half == "1"), text
        check_batches(backend, planes, ref, f"{preset} half sums {half}", TOLERANCE["fp16"])
    finally:
        backend.close()


# From which rows, and where its rounds are how full (percent), the plan
# takes gemm_sm90_layer_norm (plan/attention_plan.cpp); forced: 64 and any.
SM90_NORM_DEFAULT_ROWS = 4096
SM90_NORM_DEFAULT_FILL = 90


def sm90_norm_fill(n, embedding, multiprocessors):
    """How full (percent) gemm_sm90_layer_norm's rounds of 128-row tiles
    are for a batch of n over the device's groups of embedding / 256 blocks
    (one block a multiprocessor): limits::gemm_sm90_layer_norm_fill."""
    groups = multiprocessors // (embedding // 256)
    tiles = -(-64 * n // 128)
    rounds = -(-tiles // groups)
    return 100 * tiles // (rounds * groups)


def sm90_norm_rule(opts):
    """(from rows, least fill) of gemm_sm90_layer_norm under opts; rows 0: never."""
    if opts.get("disable") == "sm90_layer_norm":
        return 0, 1
    if opts.get("force") == "sm90_layer_norm":
        return 64, 1
    return SM90_NORM_DEFAULT_ROWS, SM90_NORM_DEFAULT_FILL


def sm90_norm_taken(opts, n, embedding, multiprocessors):
    """Whether a batch of n takes gemm_sm90_layer_norm under opts."""
    from_rows, min_fill = sm90_norm_rule(opts)
    if from_rows <= 0 or 64 * n < from_rows:
        return False
    return sm90_norm_fill(n, embedding, multiprocessors) >= min_fill


@pytest.mark.gpu
@pytest.mark.parametrize("opts", [{"force": "sm90_layer_norm"}, {}, {"disable": "sm90_layer_norm"},
                                  {"force": "sm90_layer_norm", "half_sums": "off"}],
                         ids=["every-batch", "default", "off", "every-batch-float-sums"])
@pytest.mark.parametrize("preset", ["t82", "bt4"])
def test_sm90_layer_norms_match_reference(make_test_net, preset, opts):
    """The encoder layers' output and FFN second products with their layer
    norms in the product's epilogue on sm_90 (native/src/kernels/
    gemm_sm90_layer_norm.hip: groups of N / 256 blocks exchange each row's
    statistics through global memory): from 64 rows at any fill so that
    every batch takes it (batch 7, 448 rows, leaves the last 128-row tile
    part empty; from batch 64 on a group takes several tiles, both tile
    parities of its statistics slots, its barrier reused), by default
    (from batch 64 where its rounds of tiles are 90 % full), off, and from
    64 rows with the products summed in float (half_sums=off; half by
    default).
    Within the fp16 bound of the float reference at every batch,
    NaN-poisoned outputs; describe() says which batches take it. Skips off
    sm_90."""
    gpu_vendor()  # skips without a GPU, before the reference is computed
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    backend = sm90_half_backend(weights, **opts)
    try:
        info = backend.device_info
        embedding = {"t82": 768, "bt4": 1024}[preset]
        from_rows, min_fill = sm90_norm_rule(opts)
        marker = f"output and FFN products with their layer norms on sm_90 wgmma from {from_rows} rows"
        for n in BATCHES:
            expected = sm90_norm_taken(opts, n, embedding, info["multiprocessors"])
            text = backend.describe(n)
            assert (marker in text) == expected, (n, text)
            if expected:  # both rules that chose it, and how full this batch's rounds are
                fill = sm90_norm_fill(n, embedding, info["multiprocessors"])
                assert f"rows where its rounds of row tiles are at least {min_fill} % full ({fill} % here)" in text, (
                    n, text)
                halved = opts.get("half_sums") != "off"
                assert (f"({fill} % here) (half sums)" in text) == halved, (n, text)
        check_batches(backend, planes, ref, f"{preset} layer norms on sm_90 {opts}", TOLERANCE["fp16"])
    finally:
        backend.close()


@pytest.mark.gpu
@pytest.mark.parametrize("half", ["1", "0"], ids=["half-sums", "float-sums"])
@pytest.mark.parametrize("preset", ["t82", "bt4"])
def test_qkv_attention_sm90_matches_reference(make_test_net, preset, half):
    """Each encoder layer's Q|K|V product and its attention in one launch on
    sm_90 (native/src/kernels/attn_qkv_attention_sm90.hip: wgmma fed by TMA,
    then each position's attention of a pair of heads in the epilogue, with
    smolgen's logits fetched by TMA beside the product's stages), from batch 1
    (force=qkv_attention, and Q|K|V not beside smolgen) so that every batch takes it: batch 1 and 7 leave
    the second position of the last 128-row tile past the end (its logits
    read as zeros, its output rows not stored), from batch 64 on a block
    takes several tiles and the single logits buffer turns over; the product
    summed in half (the default) and in float (half_sums=off).
    Within the fp16 bound of the float reference, NaN-poisoned outputs;
    describe() says so, and which sums. Skips off sm_90."""
    gpu_vendor()  # skips without a GPU, before the reference is computed
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    # disable=smolgen_beside: batches 1-2 run Q|K|V beside smolgen otherwise
    backend = sm90_half_backend(weights, force="qkv_attention", disable="smolgen_beside",
                                half_sums="on" if half == "1" else "off")
    try:
        for n in BATCHES:
            sums = ", half sums" if half == "1" else ""
            assert f"Q|K|V with the attention in one launch (sm_90{sums})" in backend.describe(n), backend.describe(n)
        check_batches(backend, planes, ref, f"{preset} Q|K|V with the attention, half sums {half}", TOLERANCE["fp16"])
    finally:
        backend.close()


def check_small_batch_path(make_test_net, preset, variants, marker, taken, batches, skip_reason=lambda info: None):
    """A small-batch path under each of `variants` (backend options):
    describe(n) names it (contains `marker`) exactly where taken(opts, n)
    says so, and the forward passes of `batches` stay within the fp16 bound
    of the float reference, no NaN in NaN-poisoned outputs.
    skip_reason(device_info): why this GPU cannot run the path, or None."""
    from lc0_rocm import backends

    vendor = gpu_vendor()
    weights, planes, ref = reference(make_test_net(preset, seed=1), preset)
    for env in variants:
        backend = backends.create(f"{vendor}-fp16", weights, max_batch=8, **env)
        try:
            reason = skip_reason(backend.device_info)
            if reason:
                pytest.skip(reason)
            for n in batches:
                assert (marker in backend.describe(n)) == taken(env, n), (env, backend.describe(n))
            check_batches(backend, planes, ref, f"{preset} {env}", TOLERANCE["fp16"], batches)
        finally:
            backend.close()


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ATTENTION_PRESETS)
def test_gemv_rows_match_reference(make_test_net, preset):
    """Dense layers of up to 4 rows on gemv_rows (native/docs/GEMV_ROWS.md:
    smolgen's per-position layers and the heads' flat layers): forced,
    batches 1-4, batch 5 back on BLAS; by default batch 1; all on BLAS with
    disable=gemv: within the fp16 bound of the float reference,
    NaN-poisoned outputs; describe() says which batches take it."""
    def taken(opts, n):
        return n <= {"force": 4, "disable": 0}.get(next(iter(opts), ""), 1)
    check_small_batch_path(make_test_net, preset, [{"force": "gemv"}, {}, {"disable": "gemv"}], "on gemv_rows",
                           taken, (1, 2, 3, 4, 5))


@pytest.mark.gpu
@pytest.mark.parametrize("preset", ATTENTION_PRESETS)
def test_smolgen_generate_match_reference(make_test_net, preset):
    """Smolgen's second layer norm inside its generator product
    (native/docs/SMOLGEN_GENERATE.md): by default at batch 1, forced at
    every batch here (up to 64), never with disable=smolgen_generate:
    within the fp16 bound of the float reference, NaN-poisoned outputs;
    describe() says which batches take it. The tiny presets' generator (16
    inputs a head) is below the kernel's chunk of 32: they never take it."""
    fits = preset in ("t82", "bt4")

    def taken(opts, n):
        return fits and n <= {"force": 64, "disable": 0}.get(next(iter(opts), ""), 1)
    check_small_batch_path(
        make_test_net, preset, [{}, {"force": "smolgen_generate"}, {"disable": "smolgen_generate"}],
        "its second layer norm in the generator", taken, (1, 2, 4, 5),
        lambda info: None if info["vendor"] == "nvidia" else "no mma.sync on this GPU (NVIDIA 8.0 on)")


@pytest.mark.gpu
def test_packed_input_matches_planes(make_test_net):
    from lc0_rocm import backends
    from lc0_rocm.backends.base import unpack_planes

    vendor = gpu_vendor()
    weights = load_weights(make_test_net("tiny-bt", seed=2))
    rng = np.random.default_rng(5)
    masks = rng.integers(0, 2**63, size=(9, 112), dtype=np.uint64) & rng.integers(
        0, 2**63, size=(9, 112), dtype=np.uint64)
    values = rng.choice(np.array([1.0, 0.5, 7.0], np.float32), size=(9, 112))
    backend = backends.create(vendor, weights, max_batch=16)
    try:
        packed = backend.forward_packed(masks, values)
        full = backend.forward(unpack_planes(masks, values))
        for a, b in zip(packed, full):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    finally:
        backend.close()


@pytest.mark.gpu
def test_threads_run_concurrently_with_serial_results(make_test_net):
    from lc0_rocm import backends

    vendor = gpu_vendor()
    weights = load_weights(make_test_net("tiny-attn", seed=4))
    backend = backends.create(f"{vendor}-fp16", weights, max_batch=64)
    try:
        chunks = [random_planes(64, seed=10 + i) for i in range(4)]
        serial = [backend.forward(c) for c in chunks]
        results = [None] * 4
        errors = []

        def work(i):
            try:
                for _ in range(5):
                    results[i] = backend.forward(chunks[i])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for got, want in zip(results, serial):
            for a, b in zip(got, want):
                np.testing.assert_array_equal(a, b)
    finally:
        backend.close()
