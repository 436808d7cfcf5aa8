"""lc0's WDL rescaling for contempt (v0.32.1 search/classic/params.cc and
search.cc): the contempt in Elo from Contempt / UCI_Opponent /
UCI_RatingAdv, the (ratio, diff) of the logistic WDL model it implies, and
WDLRescale itself, which moves mu and scales s of a (W, D, L)."""
from __future__ import annotations

import math

from lc0_rocm.errors import InvalidArgumentError
from lc0_rocm.search.fastmath import fast_log, fast_logistic

# Contempt modes after lc0 resolves "play" for one search.
NONE, WHITE, BLACK = 0, 1, 2


def contempt_elo(opponent: str, contempt: str, rating_adv: float) -> float:
    """lc0's GetContempt: `Contempt` is "elo" or "name=elo,name=elo,...":
    a bare number is the default, a name applies when it occurs (case
    insensitive) in UCI_Opponent; UCI_RatingAdv is the starting value."""
    value = rating_adv
    for entry in contempt.split(","):
        if not entry:
            continue
        parts = entry.split("=")
        if len(parts) == 1:
            try:
                value = float(parts[0])
            except ValueError:
                raise InvalidArgumentError(f"Invalid default contempt: {entry}") from None
        elif len(parts) == 2:
            if parts[0].lower() in opponent.lower():
                try:
                    value = float(parts[1])
                except ValueError:
                    raise InvalidArgumentError(f"Invalid contempt entry: {entry}") from None
                break
        else:
            raise InvalidArgumentError(f"Invalid contempt entry:{entry}")
    return value


def _accurate(contempt, draw_rate_target, draw_rate_reference, book_exit_bias,
              contempt_max, attenuation):
    if 0.0 < draw_rate_target < 0.001:
        draw_rate_target = 0.001
    scale_reference = 1.0 / math.log((1.0 + draw_rate_reference) / (1.0 - draw_rate_reference))
    scale_target = (scale_reference if draw_rate_target == 0 else
                    1.0 / math.log((1.0 + draw_rate_target) / (1.0 - draw_rate_target)))
    ratio = scale_target / scale_reference
    diff = (scale_target / (scale_reference * scale_reference)
            / (1.0 / math.cosh(0.5 * (1 - book_exit_bias) / scale_target) ** 2
               + 1.0 / math.cosh(0.5 * (1 + book_exit_bias) / scale_target) ** 2)
            * math.log(10) / 200 * min(max(contempt, -contempt_max), contempt_max) * attenuation)
    return ratio, diff


def _game_pair_elo(elo: float) -> float:
    sharpness, midpoint = 250.0, 2737.0
    return elo + 0.5 * sharpness * math.log(1.0 + math.exp((midpoint - elo) / sharpness))


def _simplified(contempt, draw_rate_reference, elo_active, contempt_max, attenuation):
    scale_zero, elo_slope, offset = 15.0, 425.0, 6.75
    scale_reference = 1.0 / math.log((1.0 + draw_rate_reference) / (1.0 - draw_rate_reference))
    elo_opp = elo_active - min(max(contempt, -contempt_max), contempt_max)
    elo_active = _game_pair_elo(elo_active)
    elo_opp = _game_pair_elo(elo_opp)
    scale_active = 1.0 / (1.0 / scale_zero + math.exp(elo_active / elo_slope - offset))
    scale_opp = 1.0 / (1.0 / scale_zero + math.exp(elo_opp / elo_slope - offset))
    scale_target = math.sqrt((scale_active ** 2 + scale_opp ** 2) / 2.0)
    ratio = scale_target / scale_reference

    def mu(elo):
        return (-math.log(10) / 200 * scale_zero * elo_slope
                * math.log(1.0 + math.exp(-elo / elo_slope + offset) / scale_zero))
    diff = 1.0 / (scale_reference ** 2) * (mu(elo_active) - mu(elo_opp)) * attenuation
    return ratio, diff


def rescale_params(p) -> tuple[float, float]:
    """(ratio, diff) from the search params, as lc0's BaseSearchParams."""
    contempt = contempt_elo(p.UCI_Opponent, p.Contempt, p.UCI_RatingAdv)
    if p.WDLCalibrationElo == 0:
        return _accurate(contempt, p.WDLDrawRateTarget, p.WDLDrawRateReference,
                         p.WDLBookExitBias, p.ContemptMaxValue, p.WDLContemptAttenuation)
    return _simplified(contempt, p.WDLDrawRateReference, p.WDLCalibrationElo,
                       p.ContemptMaxValue, p.WDLContemptAttenuation)


def resolve_mode(p, root_black: bool, infinite: bool, ponder: bool = False) -> int:
    """The contempt mode of one search (lc0 turns "play" into a side)."""
    mode = p.ContemptMode
    if mode == "disable":
        return NONE
    if mode == "white_side_analysis":
        return WHITE
    if mode == "black_side_analysis":
        return BLACK
    if infinite:
        return NONE
    return BLACK if root_black != ponder else WHITE


def wdl_rescale(v: float, d: float, ratio: float, diff: float, sign: float,
                invert: bool, max_s: float) -> tuple[float, float, float]:
    """lc0's WDLRescale: (v, d, mu) after moving the WDL's logistic mu by
    sign * s^2 * diff and scaling s by ratio (inverted for display); the
    input unchanged and mu 0 when the WDL is too extreme."""
    if invert:
        diff = -diff
        ratio = 1.0 / ratio
    w = (1 + v - d) / 2
    l = (1 - v - d) / 2
    eps = 0.0001
    if not (eps < w < 1 - eps and eps < d < 1 - eps and eps < l < 1 - eps):
        return v, d, 0.0
    a = fast_log(1 / l - 1)
    b = fast_log(1 / w - 1)
    s = 2 / (a + b)
    if not invert:
        s = min(max_s, s)
    mu = (a - b) / (a + b)
    s_new = s * ratio
    if invert:
        s, s_new = s_new, s
        s = min(max_s, s)
    mu_new = mu + sign * s * s * diff
    w_new = fast_logistic((-1.0 + mu_new) / s_new)
    l_new = fast_logistic((-1.0 - mu_new) / s_new)
    return w_new - l_new, max(0.0, 1.0 - w_new - l_new), mu_new
