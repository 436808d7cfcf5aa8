"""Search knobs with lc0 v0.32.1's UCI names, defaults and ranges.

`OPTIONS` lists every knob as an OptionSpec so the UCI layer can print
`option name ... type ...` lines; `SearchParams` holds validated values.
This file is where a knob is defined: the native core's SearchParams
(native/core/src/search/params.h, params.cpp) repeats the ones it reads,
and tests/test_native_params.py holds its names, types and defaults to
these (`NATIVE_KNOBS`, `SearchParams.native_settings`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from lc0_rocm.errors import InvalidArgumentError


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One UCI option: type is "spin", "check", "string", "combo" or "float"
    ("float" is lc0's FloatOption: UCI prints it as `type string`)."""
    type: str
    default: Any
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] | None = None
    help: str = ""

    def parse(self, name: str, value) -> Any:
        """Convert `value` (a string from UCI or a Python value) to this
        option's type; ValueError with a clear message when it does not fit."""
        if self.type == "check":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "1", "on", "yes"):
                return True
            if text in ("false", "0", "off", "no"):
                return False
            raise InvalidArgumentError(f"option {name}: expected true or false, got {value!r}")
        if self.type in ("spin", "float"):
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise InvalidArgumentError(f"option {name}: expected a number, got {value!r}") from None
            if number != number:  # NaN
                raise InvalidArgumentError(f"option {name}: expected a number, got {value!r}")
            if self.type == "spin":
                if number != int(number):
                    raise InvalidArgumentError(f"option {name}: expected an integer, got {value!r}")
                number = int(number)
            if (self.min is not None and number < self.min) or (
                    self.max is not None and number > self.max):
                raise InvalidArgumentError(f"option {name}: {value!r} is outside [{self.min}, {self.max}]")
            return number
        if self.type == "combo":
            text = str(value)
            for choice in self.choices or ():
                if choice.lower() == text.lower():
                    return choice
            raise InvalidArgumentError(f"option {name}: {value!r} is not one of {', '.join(self.choices or ())}")
        return str(value)


def _float(default, lo, hi, help_=""):
    return OptionSpec("float", default, lo, hi, None, help_)


def _spin(default, lo, hi, help_=""):
    return OptionSpec("spin", default, lo, hi, None, help_)


def _check(default, help_=""):
    return OptionSpec("check", default, None, None, None, help_)


# lc0 v0.32.1 defaults (src/search/classic/params.cc, stoppers/common.cc,
# neural/shared_params.cc). MinibatchSize 0 = the backend's suggestion.
OPTIONS: dict[str, OptionSpec] = {
    "MinibatchSize": _spin(0, 0, 1024, "positions per NN batch; 0 = the backend's suggestion (twice it on a GPU)"),
    "CPuct": _float(1.745, 0.0, 100.0),
    "CPuctAtRoot": _float(1.745, 0.0, 100.0),
    "CPuctBase": _float(38739.0, 1.0, 1e9),
    "CPuctBaseAtRoot": _float(38739.0, 1.0, 1e9),
    "CPuctFactor": _float(3.894, 0.0, 1000.0),
    "CPuctFactorAtRoot": _float(3.894, 0.0, 1000.0),
    "RootHasOwnCpuctParams": _check(False),
    "TwoFoldDraws": _check(True),
    "FpuStrategy": OptionSpec("combo", "reduction", None, None, ("reduction", "absolute")),
    "FpuValue": _float(0.330, -100.0, 100.0),
    "FpuStrategyAtRoot": OptionSpec("combo", "same", None, None, ("reduction", "absolute", "same")),
    "FpuValueAtRoot": _float(1.0, -100.0, 100.0),
    "PolicyTemperature": _float(1.359, 0.1, 10.0),
    "MaxPrefetch": _spin(32, 0, 1024, "fill small NN batches with likely next leaves (into the cache)"),
    "MaxCollisionEvents": _spin(917, 1, 65536, "accepted like lc0; v0.32.1's classic search does not use it"),
    "MaxCollisionVisits": _spin(80000, 1, 100000000),
    "MaxCollisionVisitsScalingStart": _spin(28, 1, 100000),
    "MaxCollisionVisitsScalingEnd": _spin(145000, 0, 100000000),
    "MaxCollisionVisitsScalingPower": _float(1.25, 0.01, 100.0),
    "OutOfOrderEval": _check(True),
    "MaxOutOfOrderEvalsFactor": _float(2.4, 0.0, 100.0),
    "StickyEndgames": _check(True),
    "MultiPV": _spin(1, 1, 500),
    "ScoreType": OptionSpec("combo", "WDL_mu", None, None, (
        "centipawn", "centipawn_with_drawscore", "centipawn_2019", "centipawn_2018",
        "win_percentage", "Q", "W-L", "WDL_mu")),
    "MovesLeftMaxEffect": _float(0.0345, 0.0, 1.0),
    "MovesLeftThreshold": _float(0.8, 0.0, 1.0),
    "MovesLeftSlope": _float(0.0027, 0.0, 1.0),
    "MovesLeftConstantFactor": _float(0.0, -1.0, 1.0),
    "MovesLeftScaledFactor": _float(1.6521, -2.0, 2.0),
    "MovesLeftQuadraticFactor": _float(-0.6521, -1.0, 1.0),
    "DrawScore": _float(0.0, -1.0, 1.0),
    "SmartPruningFactor": _float(1.33, 0.0, 10.0),
    "SmartPruningMinimumBatches": _spin(0, 0, 10000),
    "Temperature": _float(0.0, 0.0, 100.0, "pick the move by visits^(1/T) at random; 0 = most visits"),
    "TempDecayMoves": _spin(0, 0, 640),
    "TempDecayDelayMoves": _spin(0, 0, 100),
    "TempCutoffMove": _spin(0, 0, 1000),
    "TempEndgame": _float(0.0, 0.0, 100.0),
    "TempValueCutoff": _float(100.0, 0.0, 100.0),
    "TempVisitOffset": _float(0.0, -1000.0, 1000.0),
    "DirichletNoiseEpsilon": _float(0.0, 0.0, 1.0),
    "DirichletNoiseAlpha": _float(0.3, 0.0, 10000000.0),
    "NodesAsPlayouts": _check(False, "go nodes counts this search's playouts, not the reused tree"),
    "StrictNodes": _check(False, "go nodes N stops at N: the batch that would pass it is cut to the visits "
                                 "left (lc0 stops only between batches, up to a minibatch beyond); "
                                 "search threads gathering side by side may pass it by a visit or two"),
    "MinimumKLDGainPerNode": _float(0.0, 0.0, 1.0),
    "KLDGainAverageInterval": _spin(100, 1, 10000000),
    "NpsLimit": _float(0.0, 0.0, 1e6, "slow the search down to this many nodes per second; 0 = off"),
    "PerPvCounters": _check(False, "info nodes per MultiPV line = that move's visits"),
    "Contempt": OptionSpec("string", "", help="Elo, or name=elo,... matched against UCI_Opponent"),
    "ContemptMode": OptionSpec("combo", "play", None, None,
                               ("play", "white_side_analysis", "black_side_analysis", "disable")),
    "ContemptMaxValue": _float(420.0, 0.0, 10000.0),
    "WDLCalibrationElo": _float(0.0, 0.0, 10000.0),
    "WDLContemptAttenuation": _float(1.0, -10.0, 10.0),
    "WDLMaxS": _float(1.4, 0.0, 10.0),
    "WDLEvalObjectivity": _float(1.0, 0.0, 1.0),
    "WDLDrawRateTarget": _float(0.0, 0.0, 0.999),
    "WDLDrawRateReference": _float(0.5, 0.001, 0.999),
    "WDLBookExitBias": _float(0.65, -2.0, 2.0),
    "UCI_Opponent": OptionSpec("string", ""),
    "UCI_RatingAdv": _float(0.0, -10000.0, 10000.0),
    "NNCacheSize": _spin(2000000, 0, 999999999, "cached NN evaluations (positions)"),
    "Threads": _spin(0, 0, 128, "search threads; 0 = the backend's suggestion; on a GPU each has a "
                                "stream of its own (elsewhere 2 or more pipeline gathering with the network)"),
    "TaskWorkers": _spin(-1, -1, 128, "threads that help each gathering pick in separate branches "
                                      "per search thread (native search); -1 = min(4, cores / (Threads - 1) - 1), "
                                      "counting the cores this process may use"),
    "MinimumPickingWork": _spin(1, 1, 100000, "a branch with more visits than this may go to a task worker"),
    "MinimumRemainingPickingWork": _spin(20, 0, 100000, "... when at least this many visits remain for "
                                                        "the branches after it"),
    "MinimumProcessingWork": _spin(20, 2, 100000, "picked leaves needed before task workers help "
                                                  "expand them"),
    "MinimumPerTaskProcessing": _spin(8, 1, 100000, "... in parts of at least this many leaves"),
    "IdlingMinimumWork": _spin(0, 0, 10000, "a gathering sends its batch early, when the network is "
                                            "idle, once it has more than this many positions"),
    "ThreadIdlingThreshold": _spin(-1, -1, 128, "the network counts as idle when more than this many "
                                                "search threads are not at it; -1 = the search threads "
                                                "less 2, at least 1 (lc0's 1 at two threads)"),
    "ParallelSearchMinimumVisits": _spin(2000, 0, 2000000000,
                                         "below this many visits at the root one search thread gathers "
                                         "(native search): in a small tree, batches gathered side by side "
                                         "cost quality per node"),
    "MaxBatchesInFlight": _spin(0, 0, 128, "at most this many search threads hold a batch at once; more only "
                                           "add collisions (0: the backend's suggested Threads, at least 2)"),
    "SolidTreeThreshold": _spin(2000000000, 1, 2000000000,
                                "visits after which a node's children are laid out in one block "
                                "(native search; lc0's 100 measured no faster here, so never by default)"),
    "VerboseMoveStats": _check(False),
}

# Knobs the Python layer applies itself, around the native search: the root
# pick (temperature), MultiPV and reporting, the WDL rescaling's inputs (the
# core takes their result per search), and MaxCollisionEvents (accepted like
# lc0, unused by v0.32.1's classic search).
PYTHON_ONLY = frozenset({
    "MaxCollisionEvents", "MultiPV", "Temperature", "TempDecayMoves", "TempDecayDelayMoves",
    "TempCutoffMove", "TempEndgame", "TempValueCutoff", "TempVisitOffset", "PerPvCounters",
    "VerboseMoveStats", "ContemptMaxValue", "WDLCalibrationElo", "WDLContemptAttenuation",
    "WDLEvalObjectivity", "WDLDrawRateTarget", "WDLDrawRateReference", "WDLBookExitBias",
    "UCI_RatingAdv", "MaxBatchesInFlight"})
# Knobs whose value the engine resolves before the core sees it (0 = the
# backend's suggestion there; the core takes only the number).
RESOLVED_BY_ENGINE = ("MinibatchSize", "Threads")
# Combos the core reads as numbers: params.h's enum FpuStrategy.
FPU_STRATEGY_CODES = {"reduction": 0, "absolute": 1, "same": 2}
# Every knob the native core's SearchParams::set takes, by lc0's name.
NATIVE_KNOBS = tuple(name for name, spec in OPTIONS.items()
                     if name not in PYTHON_ONLY and name not in RESOLVED_BY_ENGINE
                     and (spec.type in ("spin", "float", "check") or name in ("FpuStrategy", "FpuStrategyAtRoot")))


def native_number(name: str, value) -> float:
    """A knob's value as the native core takes it (a double)."""
    if name in ("FpuStrategy", "FpuStrategyAtRoot"):
        return float(FPU_STRATEGY_CODES[value])
    return float(value)


def option_name(name: str) -> str:
    """The canonical spelling of a knob, matched case-insensitively (UCI
    option names are case-insensitive); KeyError when unknown."""
    for known in OPTIONS:
        if known.lower() == str(name).lower():
            return known
    raise KeyError(name)


@dataclasses.dataclass
class SearchParams:
    """Validated search knob values, attribute names = lc0 UCI names."""
    values: dict = dataclasses.field(default_factory=lambda: {k: s.default for k, s in OPTIONS.items()})

    def set(self, name: str, value) -> None:
        try:
            canonical = option_name(name)
        except KeyError:
            raise InvalidArgumentError(f"unknown option {name!r}") from None
        parsed = OPTIONS[canonical].parse(canonical, value)
        if canonical == "Contempt":
            from lc0_rocm.search.contempt import contempt_elo
            contempt_elo("", parsed, 0.0)      # raises ValueError on a bad entry
        self.values[canonical] = parsed

    def __getattr__(self, name: str):
        values = self.__dict__.get("values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)

    def native_settings(self, minibatch: int, threads: int) -> list[tuple[str, float]]:
        """(name, number) for every knob the native core reads, with the
        minibatch size and thread count the engine resolved (at least 1)."""
        settings = [(name, native_number(name, self.values[name])) for name in NATIVE_KNOBS]
        return settings + [("MinibatchSize", float(max(1, minibatch))), ("Threads", float(max(1, threads)))]

    # Root twins: lc0 uses the AtRoot values only with RootHasOwnCpuctParams.
    def cpuct(self, at_root: bool) -> tuple[float, float, float]:
        own = at_root and self.values["RootHasOwnCpuctParams"]
        v = self.values
        if own:
            return v["CPuctAtRoot"], v["CPuctBaseAtRoot"], v["CPuctFactorAtRoot"]
        return v["CPuct"], v["CPuctBase"], v["CPuctFactor"]

    def fpu(self, at_root: bool) -> tuple[bool, float]:
        """(absolute?, value) for a node."""
        v = self.values
        if not at_root:
            return v["FpuStrategy"] == "absolute", v["FpuValue"]
        strategy = v["FpuStrategyAtRoot"]
        if strategy == "same":
            return v["FpuStrategy"] == "absolute", v["FpuValue"]
        return strategy == "absolute", v["FpuValueAtRoot"]
