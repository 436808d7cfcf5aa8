"""How lc0 v0.32.1 reports a move's value on the `info` line: `score cp`
per ScoreType (default WDL_mu), `score mate`, and `wdl` in permille."""
from __future__ import annotations

import math



def _trunc(x: float) -> int:
    return int(x)   # C++ float -> int conversion truncates toward zero


def wdl_rescale(wl: float, d: float) -> tuple[float, float, float]:
    """lc0's info-line WDLRescale with default options (ratio 1, no
    contempt): (wl, d, mu). The values come back through lc0's fast log/exp
    approximations, so they move slightly, as in lc0's output."""
    from lc0_rocm.search.contempt import wdl_rescale as rescale
    return rescale(wl, d, 1.0, 0.0, 1.0, True, 1.4)


def wdl_mu(wl: float, d: float) -> float:
    return wdl_rescale(wl, d)[2]


def score_cp(wl: float, d: float, q: float, score_type: str = "WDL_mu",
             has_wdl: bool = True, rescaled: tuple[float, float, float] | None = None) -> int:
    """`score cp` for a non-mate value (wl = W - L, q = wl with draw score).
    WDL_mu needs lc0's WDLRescale of (wl, d): pass it as `rescaled`
    (wl, d, mu), else the default-options one is used."""
    if score_type == "WDL_mu":
        wl, d, mu = rescaled if rescaled is not None else wdl_rescale(wl, d)
        centipawn = 45 * math.tan(1.56728071628 * wl)
        if (has_wdl and mu != 0.0 and abs(wl) + d < 0.996
                and (abs(mu) < 1.0 or abs(centipawn) < abs(100 * mu))):
            return _trunc(100 * mu)
        return _trunc(centipawn)
    if score_type == "centipawn_with_drawscore":
        return _trunc(90 * math.tan(1.5637541897 * q))
    if score_type == "centipawn":
        return _trunc(90 * math.tan(1.5637541897 * wl))
    if score_type == "centipawn_2019":
        return _trunc(295 * wl / (1 - 0.976953126 * wl ** 14))
    if score_type == "centipawn_2018":
        return _trunc(290.680623072 * math.tan(1.548090806 * wl))
    if score_type == "win_percentage":
        return _trunc(wl * 5000 + 5000)
    if score_type == "Q":
        return _trunc(q * 10000)
    if score_type == "W-L":
        return _trunc(wl * 10000)
    raise ValueError(f"unknown ScoreType {score_type!r}")


def mate_score(wl: float, plies_left: float, tablebase: bool = False) -> int:
    """`score mate N` for a proven win (N > 0) or loss (N < 0)."""
    rounded = math.floor(abs(plies_left) + 0.5) * (1 if plies_left >= 0 else -1)
    return _trunc(math.copysign(rounded / 2 + (101 if tablebase else 1), wl))


def wdl_permille(wl: float, d: float) -> tuple[int, int, int]:
    """lc0's integer W, D, L (sum 1000)."""
    w = max(0, _round(500.0 * (1.0 + wl - d)))
    l = max(0, _round(500.0 * (1.0 - wl - d)))
    dd = 1000 - w - l
    if dd < 0:
        w = min(1000, max(0, w + _trunc(dd / 2)))
        l = 1000 - w
        dd = 0
    return w, dd, l


def _round(x: float) -> int:
    """std::round: half away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)
