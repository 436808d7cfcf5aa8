"""UCI option specs: lc0-style listing and `setoption` value parsing."""
from __future__ import annotations

import collections

import pytest

from lc0_rocm.uci_options import OptionSpec, as_spec, option_line, parse_value


def test_option_lines_like_lc0():
    # lc0 v0.32.1 prints these exact lines for its options
    assert option_line("Threads", OptionSpec("spin", 0, 0, 128)) == \
        "option name Threads type spin default 0 min 0 max 128"
    assert option_line("CPuct", OptionSpec("float", 1.745, 0.0, 100.0)) == \
        "option name CPuct type string default 1.745000"
    assert option_line("Ponder", OptionSpec("check", False)) == "option name Ponder type check default false"
    assert option_line("LogFile", OptionSpec("string", "")) == "option name LogFile type string default "
    assert option_line("FpuStrategy", OptionSpec("combo", "reduction", choices=("reduction", "absolute"))) == \
        "option name FpuStrategy type combo default reduction var reduction var absolute"


def test_parse_values_and_errors():
    spin = OptionSpec("spin", 1, 1, 500)
    assert parse_value("MultiPV", spin, " 3 ") == 3
    for bad in ("0", "501", "x", "1.5", ""):
        with pytest.raises(ValueError, match="MultiPV"):
            parse_value("MultiPV", spin, bad)
    flt = OptionSpec("float", 1.0, 0.0, 10.0)
    assert parse_value("X", flt, "2.5") == 2.5
    for bad in ("nan", "inf", "11", "-1", "abc"):
        with pytest.raises(ValueError):
            parse_value("X", flt, bad)
    check = OptionSpec("check", False)
    assert parse_value("C", check, "TRUE") is True and parse_value("C", check, "false") is False
    with pytest.raises(ValueError):
        parse_value("C", check, "maybe")
    combo = OptionSpec("combo", "a", choices=("WDL_mu", "Q"))
    assert parse_value("S", combo, "wdl_mu") == "WDL_mu"
    with pytest.raises(ValueError, match="one of"):
        parse_value("S", combo, "cp")
    assert parse_value("F", OptionSpec("string", ""), "  a b  ") == "a b"


def test_as_spec_accepts_tuples_and_objects():
    assert as_spec(("spin", 5, 0, 10)) == OptionSpec("spin", 5, 0, 10)
    Spec = collections.namedtuple("Spec", "type default min max choices help")
    assert as_spec(Spec("combo", "x", None, None, ("x", "y"), "")) == OptionSpec("combo", "x", None, None, ("x", "y"))
    assert as_spec(Spec("float", 0.5, 0.0, 1.0, None, "")).type == "float"
    with pytest.raises(ValueError):
        as_spec(("weird", 1))

