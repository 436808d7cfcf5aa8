"""lc0-rocm: Leela Chess Zero networks on AMD GPUs (ROCm/HIP), from Python.

Public names are imported lazily so that `import lc0_rocm` stays cheap and a
missing optional piece does not break the rest.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "load_weights": "lc0_rocm.weights",
    "Weights": "lc0_rocm.weights",
    "WeightsError": "lc0_rocm.weights",
    "NetSpec": "lc0_rocm.netspec",
    "encode": "lc0_rocm.encoder",
    "load_network": "lc0_rocm.network",
    "Network": "lc0_rocm.network",
    "Evaluation": "lc0_rocm.network",
    "Engine": "lc0_rocm.engine",
    "SearchResult": "lc0_rocm.engine",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lc0_rocm' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
