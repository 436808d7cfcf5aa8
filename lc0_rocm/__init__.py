"""lc0-rocm: Leela Chess Zero (lc0) networks on AMD and NVIDIA GPUs, from Python.

    import chess, lc0_rocm
    with lc0_rocm.load_network("maia-1900", backend="auto") as net:
        ev = net.evaluate(chess.Board())              # ev.policy, ev.wdl, ev.q, ev.moves_left
        result = lc0_rocm.Engine(net).search(chess.Board(), nodes=800)
        print(result.best_move, result.wdl, result.nps)

Public API (each has its own help()):
  load_network(path=None, backend="auto", **options) -> Network
      A net file, or a name found the way lc0 finds nets (working
      directory, then the cache `lc0-rocm fetch-net` fills); None: the
      default net. Backends: "auto", "cpu", "rocm", "rocm-fp16", "cuda", ...
  Network        .evaluate(board) -> Evaluation, .evaluate_batch(boards),
                 .forward(planes), .forward_packed(masks, values), their
                 *_into(..., out) forms with .host_empty(shape) buffers,
                 .close(); a context manager
  Evaluation     policy (dict chess.Move -> probability), wdl, q, moves_left
  Engine         Engine(network, **lc0_options).search(board, nodes=...,
                 movetime=SECONDS, ...) -> SearchResult
  SearchResult   best_move, pv, wdl, q, nodes, nps, time (seconds), lines, stats
  analyse(source, network=None, nodes=... | evaluate=True, ...) -> AnalysisRecord per
                 position of a PGN, EPD or FEN file (or boards), many at once
  SearchInfo     one `info` line: depth, nodes, pv, wdl, score_cp or mate, ...
  MoveStats      a root move's visits, q, prior p and wdl (SearchResult.stats)
                 Every `wdl` (Evaluation, SearchResult, SearchInfo, MoveStats)
                 is (win, draw, loss) probabilities for the side to move.
  load_weights(path) -> Weights, WeightsError, NetSpec (shape facts of a net),
  encode(board) -> the 112 input planes, NetNotFoundError, __version__
  Lc0RocmError   the root of every error lc0-rocm raises (each also keeps
                 its built-in base: WeightsError, BackendError, ...)

Names are imported on first use, so `import lc0_rocm` stays cheap.
"""
from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "load_network": "lc0_rocm.network",
    "Network": "lc0_rocm.network",
    "Evaluation": "lc0_rocm.network",
    "Engine": "lc0_rocm.engine",
    "SearchResult": "lc0_rocm.engine",
    "SearchInfo": "lc0_rocm.engine",
    "MoveStats": "lc0_rocm.engine",
    "load_weights": "lc0_rocm.weights",
    "Weights": "lc0_rocm.weights",
    "WeightsError": "lc0_rocm.weights",
    "NetSpec": "lc0_rocm.netspec",
    "encode": "lc0_rocm.encoder",
    "NetNotFoundError": "lc0_rocm.netfiles",
    "analyse": "lc0_rocm.analysis",
    "AnalysisRecord": "lc0_rocm.analysis",
    "Lc0RocmError": "lc0_rocm.errors",
}

__all__ = ["AnalysisRecord", "Engine", "Evaluation", "Lc0RocmError", "MoveStats", "NetNotFoundError", "NetSpec",
           "Network", "SearchInfo", "SearchResult", "Weights", "WeightsError", "__version__", "analyse", "encode",
           "load_network", "load_weights"]

if TYPE_CHECKING:   # type checkers and IDEs see the real objects
    from lc0_rocm.analysis import AnalysisRecord, analyse
    from lc0_rocm.encoder import encode
    from lc0_rocm.engine import Engine, MoveStats, SearchInfo, SearchResult
    from lc0_rocm.errors import Lc0RocmError
    from lc0_rocm.netfiles import NetNotFoundError
    from lc0_rocm.netspec import NetSpec
    from lc0_rocm.network import Evaluation, Network, load_network
    from lc0_rocm.weights import Weights, WeightsError, load_weights


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lc0_rocm' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value   # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return list(__all__)
