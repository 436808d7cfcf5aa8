"""The GPU backends' options (native.OPTIONS, lc0's backend-options syntax):
each is read by its kind before anything is built, an unknown or malformed
one is an error that says what is valid, and the settings reach the
library's config struct (lc0rocm.h) as its fields and path bits. No GPU
needed: the struct is cffi's from the header alone."""
from __future__ import annotations

import re

import cffi
import pytest

from lc0_rocm import backends
from lc0_rocm.backends import native, options
from lc0_rocm.backends.options import BackendOptionsError


@pytest.fixture(scope="module")
def ffi():
    f = cffi.FFI()
    f.cdef(native.cdef_text())
    return f


def config(ffi, **given):
    cfg = ffi.new("lc0rocm_config*")
    native.fill_settings(cfg, native.read_settings("cuda-fp16", given))
    return cfg


def test_defaults_fill_the_config(ffi):
    cfg = config(ffi)
    assert (cfg.graphs, cfg.gemm_tune, cfg.half_sums, cfg.side_stream) == (1, 1, 1, 1)
    assert (cfg.dependent_launch, cfg.mapped_io, cfg.disabled, cfg.forced) == (-1, 1, 0, 0)


def test_settings_reach_the_config(ffi):
    cfg = config(ffi, graphs="off", gemm_tune="false", half_sums="0", side_stream="no", dependent_launch="On",
                 mapped_io="16", disable="winograd/fused_se", force="gemv")
    assert (cfg.graphs, cfg.gemm_tune, cfg.half_sums, cfg.side_stream) == (0, 0, 0, 0)
    assert (cfg.dependent_launch, cfg.mapped_io) == (1, 16)
    bits = native.path_bits()
    assert cfg.disabled == bits["winograd"][0] | bits["fused_se"][0]
    assert cfg.forced == bits["gemv"][0]
    assert config(ffi, dependent_launch="off").dependent_launch == 0
    # Python values as keywords, and a quoted comma list as lc0's syntax writes it.
    assert config(ffi, graphs=False, mapped_io=0).graphs == 0
    tree = options.parse('disable="winograd, value_tail",mapped_io=4')
    cfg = config(ffi, **tree)
    assert cfg.disabled == bits["winograd"][0] | bits["value_tail"][0] and cfg.mapped_io == 4


def test_path_names_are_the_headers(ffi):
    """Every LC0ROCM_PATH_* of lc0rocm.h is an option name, bit for bit, and
    force= takes exactly LC0ROCM_FORCEABLE_PATHS."""
    lib = ffi.dlopen(None)
    forceable = 0
    for name, (bit, can_force) in native.path_bits().items():
        assert getattr(lib, f"LC0ROCM_PATH_{name.upper()}") == bit
        forceable |= bit if can_force else 0
    assert forceable == lib.LC0ROCM_FORCEABLE_PATHS
    assert len(native.path_bits()) == len(re.findall(r"LC0ROCM_PATH_\w+ = 1 <<", native.cdef_text()))


@pytest.mark.parametrize("given,message", [
    ({"colour": "blue"}, r"cuda-fp16: unknown option colour; valid options: arch, dependent_launch, device, disable, "
                         r"force, gemm_tune, gpu, graphs, half_sums, mapped_io, max_batch, side_stream$"),
    ({"colour": "blue", "size": "1"}, "unknown options colour, size; valid options: arch"),
    ({"max_batch": "0"}, r"max_batch='0' is not an integer in 1\.\.65536"),
    ({"max_batch": "lots"}, r"max_batch='lots' is not an integer in 1\.\.65536"),
    ({"mapped_io": "-1"}, r"mapped_io='-1' is not an integer in 0\.\.65536"),
    ({"gpu": "-1"}, r"gpu='-1' is not an integer >= 0"),
    ({"graphs": "maybe"}, r"graphs='maybe' is not true or false \(on/off, yes/no, 1/0\)"),
    ({"gemm_tune": 2}, r"gemm_tune=2 is not true or false"),
    ({"dependent_launch": "sometimes"}, r"dependent_launch='sometimes' is not one of auto, on, off"),
    ({"disable": "warp_drive"}, r"disable='warp_drive' is not names from winograd, .* \(unknown: warp_drive\)"),
    ({"force": "value_tail"}, r"force='value_tail' is not names from .* \(unknown: value_tail\)"),
    ({"disable": "gemv", "force": "gemv/winograd"}, r"cuda-fp16: gemv both disabled and forced"),
])
def test_a_bad_option_is_a_clear_error_before_anything_is_built(given, message, monkeypatch):
    """Through the registry, as a user's BackendOptions reach it: the error
    names the option and what is valid, and nothing is built (the build
    would fail here: no toolchain is faked)."""
    monkeypatch.setattr(native, "build", lambda *a, **k: pytest.fail("built before the options were checked"))
    with pytest.raises(BackendOptionsError, match=message):
        backends.create("cuda-fp16", None, **given)


def test_wrappers_hand_the_settings_to_gpu_children():
    """A wrapper's child gets the GPU keys (option_names lists them)."""
    assert {"graphs", "disable", "force", "mapped_io"} <= backends.option_names("cuda-fp16")


def test_describe_options_lists_every_key():
    text = options.describe_options(native.OPTIONS)
    for key in native.OPTIONS:
        assert re.search(rf"^{key}=<", text, re.M), key
    assert "mapped_io=<an integer in 0..65536> (default 1)" in text
