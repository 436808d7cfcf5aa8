"""How lc0 v0.32.1 reports a move's value on the `info` line: `score cp`
per ScoreType (default WDL_mu), `score mate`, and `wdl` in permille."""
from __future__ import annotations

import math

import numpy as np

from lc0_rocm.search.fastmath import fast_exp, fast_log


def _trunc(x: float) -> int:
    return int(x)   # C++ float -> int conversion truncates toward zero


def _fast_logistic(a: float) -> float:
    if a > 20.0:
        return 1.0
    if a < -20.0:
        return 0.0
    return 1.0 / (1.0 + float(fast_exp(np.float32(-a))))


def wdl_rescale(wl: float, d: float) -> tuple[float, float, float]:
    """lc0's WDLRescale as its info output applies it with default options
    (ratio 1, no contempt, inverted): returns (wl, d, mu). The values come
    back through lc0's fast log/exp approximations, so they move slightly,
    as in lc0's output; mu is 0 when the WDL is too extreme for the model."""
    w = (1 + wl - d) / 2
    l = (1 - wl - d) / 2
    eps = 0.0001
    if not (eps < w < 1 - eps and eps < d < 1 - eps and eps < l < 1 - eps):
        return wl, d, 0.0
    a = fast_log(1 / l - 1)
    b = fast_log(1 / w - 1)
    s = 2 / (a + b)
    mu = (a - b) / (a + b)
    w_new = _fast_logistic((-1.0 + mu) / s)
    l_new = _fast_logistic((-1.0 - mu) / s)
    return w_new - l_new, max(0.0, 1.0 - w_new - l_new), mu


def wdl_mu(wl: float, d: float) -> float:
    return wdl_rescale(wl, d)[2]


def score_cp(wl: float, d: float, q: float, score_type: str = "WDL_mu",
             has_wdl: bool = True) -> int:
    """`score cp` for a non-mate value (wl = W - L, q = wl with draw score)."""
    if score_type == "WDL_mu":
        wl, d, mu = wdl_rescale(wl, d)
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
