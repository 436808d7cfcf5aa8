"""lc0's float approximations that change search numbers: its fast exp (policy
softmax), fast log (cpuct growth) and the 16-bit storage of policy priors.
Reproduced from their definitions so that our priors equal lc0's bit for bit."""
from __future__ import annotations

import math
import struct

import numpy as np

_F32 = np.float32
_FLOAT32 = struct.Struct("<f")
_UINT32 = struct.Struct("<I")


def fast_exp(x: np.ndarray) -> np.ndarray:
    """lc0's FastExp: 2^(x*log2 e) with a quadratic fit of the fraction,
    evaluated in float32 like lc0 (relative error about 1e-3)."""
    a = np.asarray(x, dtype=_F32) * _F32(1.442695040)
    # lc0 rounds down via int(a - 1) for negative a (int() truncates).
    whole = np.where(a < 0, np.trunc(a - _F32(1)), np.trunc(a)).astype(np.int32)
    frac = (a - whole.astype(_F32)).astype(_F32)
    mant = (_F32(1) + frac * (_F32(0.6602339) + _F32(0.33976606) * frac)).astype(_F32)
    bits = (mant.view(np.int32).astype(np.int64) + (whole.astype(np.int64) << 23)) & 0xFFFFFFFF
    out = bits.astype(np.uint32).view(_F32)
    return np.where(a < -126, _F32(0), out).astype(_F32)


def fast_log(a: float) -> float:
    """lc0's FastLog: quadratic fit of log2 of the mantissa, times ln 2."""
    mantissa, exponent = math.frexp(a)          # a = mantissa * 2^exponent, mantissa in [0.5, 1)
    out = 2.0 * mantissa - 1.0                  # lc0's mantissa is in [1, 2)
    log2 = out * (1.3465552 - 0.34655523 * out) + (exponent - 1)
    return 0.6931471805599453 * log2


def _f32(x: float) -> float:
    """x rounded to float32 (x within float32's range)."""
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


_LOG2E, _C1, _C2 = _f32(1.442695040), _f32(0.6602339), _f32(0.33976606)


def _fast_exp_scalar(x: float) -> float:
    """fast_exp of one float32 value (|x| well inside float32's range),
    without numpy: each float32 operation done in double and rounded to
    float32, which gives float32's own result (53 >= 2 * 24 + 2 bits)."""
    a = _f32(x * _LOG2E)
    if a < -126:
        return 0.0
    whole = int(_f32(a - 1.0)) if a < 0 else int(a)      # int() truncates, like np.trunc
    frac = _f32(a - whole)
    mant = _f32(1.0 + _f32(frac * _f32(_C1 + _f32(_C2 * frac))))
    bits = (_UINT32.unpack(_FLOAT32.pack(mant))[0] + (whole << 23)) & 0xFFFFFFFF
    return _FLOAT32.unpack(_UINT32.pack(bits))[0]


def fast_logistic(a: float) -> float:
    """lc0's FastLogistic: 1 / (1 + FastExp(-a)), clamped outside +-20."""
    if a > 20.0:
        return 1.0
    if a < -20.0:
        return 0.0
    return 1.0 / (1.0 + _fast_exp_scalar(_f32(-a)))


def policy_softmax(logits: np.ndarray, inv_temperature: float) -> np.ndarray:
    """lc0's policy softmax over one position's legal-move logits (float32,
    max subtracted, FastExp, sequential float32 sum)."""
    logits = np.asarray(logits, dtype=_F32)
    if logits.size == 0:
        return logits
    e = fast_exp((logits - logits.max()) * _F32(inv_temperature))
    total = _F32(e.sum(dtype=np.float64))
    scale = _F32(1) / total if total > 0 else _F32(1)
    return (e * scale).astype(_F32)


def compress_priors(p: np.ndarray) -> np.ndarray:
    """Round priors the way lc0 stores them in an Edge (16 bits: the float's
    top bits after adding a rounding constant) and return the stored values."""
    p = np.asarray(p, dtype=_F32)
    bits = p.view(np.int32).astype(np.int64) + ((1 << 11) - (3 << 28))
    stored = np.where(bits < 0, 0, bits >> 12).astype(np.uint32)
    return ((stored << np.uint32(12)) | np.uint32(3 << 28)).view(_F32).copy()


def compress_key(p: np.ndarray) -> np.ndarray:
    """The 16-bit code lc0 sorts edges by (same order as the stored prior)."""
    p = np.asarray(p, dtype=_F32)
    bits = p.view(np.int32).astype(np.int64) + ((1 << 11) - (3 << 28))
    return np.where(bits < 0, 0, bits >> 12)
