"""UCI options: their specs, how lc0 lists them, and parsing of `setoption` values.

A spec is (type, default, min, max, choices) with type one of
"spin" (int), "float" (listed as `type string`, as lc0 does for its float
options), "check" (bool), "string", "combo" (one of choices) or "button".
Engine.OPTIONS from the search may use tuples or objects with those field
names; `as_spec` turns either into an OptionSpec.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from lc0_rocm import backends


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    type: str
    default: Any = None
    min: Any = None
    max: Any = None
    choices: tuple = ()

    def __post_init__(self):
        if self.type not in ("spin", "float", "check", "string", "combo", "button"):
            raise ValueError(f"unknown option type {self.type!r}")


def as_spec(spec) -> OptionSpec:
    """OptionSpec from an OptionSpec, a (type, default, min, max, choices)
    tuple (shorter tuples allowed) or any object with those attributes."""
    if isinstance(spec, OptionSpec):
        return spec
    if isinstance(spec, (tuple, list)):
        fields = list(spec) + [None] * (5 - len(spec))
        type_, default, lo, hi, choices = fields[:5]
    else:
        type_ = getattr(spec, "type", None) or getattr(spec, "kind", None)
        default = getattr(spec, "default", None)
        lo = getattr(spec, "min", None)
        hi = getattr(spec, "max", None)
        choices = getattr(spec, "choices", None)
    type_ = str(type_)
    if type_ == "spin" and default is not None and not isinstance(default, bool) \
            and isinstance(default, float) and not float(default).is_integer():
        type_ = "float"  # a spin with a fractional default is a float option
    if type_ in ("float", "double", "real"):
        type_ = "float"
    return OptionSpec(type_, default, lo, hi, tuple(choices or ()))


def format_default(spec: OptionSpec) -> str:
    if spec.type == "check":
        return "true" if spec.default else "false"
    if spec.type == "float":
        return f"{float(spec.default):.6f}"
    if spec.default is None:
        return ""
    return str(spec.default)


def option_line(name: str, spec: OptionSpec) -> str:
    """The `option name ...` line of the `uci` answer, in lc0's style."""
    if spec.type == "button":
        return f"option name {name} type button"
    if spec.type == "float":
        return f"option name {name} type string default {format_default(spec)}"
    line = f"option name {name} type {spec.type} default {format_default(spec)}"
    if spec.type == "spin":
        line += f" min {spec.min} max {spec.max}"
    elif spec.type == "combo":
        line += "".join(f" var {c}" for c in spec.choices)
    return line


def parse_value(name: str, spec: OptionSpec, text: str):
    """The typed value of `setoption name NAME value TEXT`; ValueError when bad."""
    text = text.strip()
    if spec.type == "check":
        low = text.lower()
        if low in ("true", "1", "on", "yes"):
            return True
        if low in ("false", "0", "off", "no"):
            return False
        raise ValueError(f"option {name} expects true or false, got {text!r}")
    if spec.type == "spin":
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"option {name} expects an integer, got {text!r}") from None
        _check_range(name, spec, value)
        return value
    if spec.type == "float":
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"option {name} expects a number, got {text!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"option {name} expects a finite number, got {text!r}")
        _check_range(name, spec, value)
        return value
    if spec.type == "combo":
        for choice in spec.choices:
            if text.lower() == str(choice).lower():
                return choice
        raise ValueError(f"option {name} must be one of {', '.join(map(str, spec.choices))}; got {text!r}")
    if spec.type == "button":
        return True
    return text


def _check_range(name: str, spec: OptionSpec, value) -> None:
    if spec.min is not None and value < spec.min:
        raise ValueError(f"option {name} must be >= {spec.min}, got {value}")
    if spec.max is not None and value > spec.max:
        raise ValueError(f"option {name} must be <= {spec.max}, got {value}")


AUTODISCOVER = "<autodiscover>"

# Options the UCI layer itself owns (lc0 v0.32.1 names, types and defaults,
# except Backend, whose choices are ours). Search knobs come from
# Engine.OPTIONS and are listed after these.
UCI_OPTIONS: dict[str, OptionSpec] = {
    "WeightsFile": OptionSpec("string", AUTODISCOVER),
    "Backend": OptionSpec("combo", "auto", choices=tuple(
        ["auto"] + [n for n in backends.names() if n != "auto"])),
    "BackendOptions": OptionSpec("string", ""),
    "LogFile": OptionSpec("string", ""),
    "Ponder": OptionSpec("check", False),
    "SyzygyPath": OptionSpec("string", ""),
    "MoveOverheadMs": OptionSpec("spin", 200, 0, 100000000),
    "Slowmover": OptionSpec("float", 1.0, 0.0, 100.0),
    "UCI_Chess960": OptionSpec("check", False),
    "UCI_ShowWDL": OptionSpec("check", False),
    "UCI_ShowMovesLeft": OptionSpec("check", False),
}

# Knobs the UCI layer also reads, listed here only when the engine does not
# declare them itself (the engine's own spec wins).
UCI_FALLBACK_OPTIONS: dict[str, OptionSpec] = {
    "MultiPV": OptionSpec("spin", 1, 1, 500),
    "VerboseMoveStats": OptionSpec("check", False),
}


def parse_backend_options(text: str) -> dict:
    """lc0's BackendOptions string (`key=value,...`, children in parentheses)
    as an option tree (see backends.options); ValueError when it does not
    parse or names an unknown backend."""
    tree = backends.parse_options(text)
    _check_counts(tree)
    return tree


# Keys whose value is a count: (least value, what it counts). Checked when
# the option is set, so that a bad value never reaches a later `go`.
COUNT_KEYS = {"threads": (1, "threads"), "max_batch": (1, "positions per batch"),
              "minimum-split-size": (1, "positions"), "gpu": (0, "a device index"),
              "device": (0, "a device index")}


def _check_counts(tree: dict, where: str = "") -> None:
    for key, value in tree.items():
        if isinstance(value, dict):
            _check_counts(value, f"{where}{key}: ")
        elif key in COUNT_KEYS:
            least, what = COUNT_KEYS[key]
            try:
                number = int(value)
            except ValueError:
                number = None
            if number is None or number < least:
                raise ValueError(f"BackendOptions: {where}{key}={value} must be an integer >= {least} ({what})")
