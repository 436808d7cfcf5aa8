"""Leaf evaluation for the search: encode positions, run the network in one
batch, turn raw policy logits into lc0's priors; plus the NN cache.

`NetworkEvaluator` adapts a `lc0_rocm.network.Network`; tests may pass any
object with the same three methods (`prepare`, `run`, `has_moves_left`).
"""
from __future__ import annotations

from collections import OrderedDict

import chess
import numpy as np

from lc0_rocm.backends.base import POLICY_SIZE

# Canonical input formats need the board transform for move indices.
_CANONICAL_FORMATS = {4, 5, 132, 133}


class NetworkEvaluator:
    """Batches leaves for `network.forward`."""

    def __init__(self, network):
        from lc0_rocm import encoder   # imported late: it may land after us
        self._encoder = encoder
        self.network = network
        self.input_format = int(getattr(network, "input_format", 1))
        self.has_moves_left = bool(getattr(network, "has_moves_left", False))

    def prepare(self, board: chess.Board):
        """-> (legal moves, request): the request is what run() needs later,
        taken now because the board will move on."""
        enc = self._encoder
        fmt = self.input_format
        transform = None
        if fmt in _CANONICAL_FORMATS and hasattr(enc, "encode_packed"):
            masks, values, transform = enc.encode_packed(board, fmt)
            planes = (masks, values)
        else:
            planes = enc.encode(board, fmt)
        moves, indices = enc.policy_indices(board, fmt, transform)
        return list(moves), (planes, np.asarray(indices, dtype=np.int64))

    def run(self, requests: list) -> list[tuple[np.ndarray, float, float, float]]:
        """-> per request: (logits of its legal moves, q, d, m), q and d from
        the side to move there."""
        if not requests:
            return []
        first = requests[0][0]
        if isinstance(first, tuple):
            from lc0_rocm.backends.base import unpack_planes
            masks = np.stack([r[0][0] for r in requests])
            values = np.stack([r[0][1] for r in requests])
            planes = unpack_planes(masks, values)
        else:
            planes = np.stack([r[0] for r in requests]).astype(np.float32, copy=False)
        policy, wdl, moves_left = self.network.forward(planes)
        policy = np.asarray(policy, dtype=np.float32).reshape(len(requests), POLICY_SIZE)
        wdl = np.asarray(wdl, dtype=np.float32)
        moves_left = np.asarray(moves_left, dtype=np.float32).reshape(-1)
        out = []
        for i, (_, indices) in enumerate(requests):
            w, d, l = (float(x) for x in wdl[i])
            out.append((policy[i, indices], w - l, d, float(moves_left[i])))
        return out


class NNCache:
    """lc0's NN cache: keyed by the position (board and repetition count),
    bounded, oldest entries dropped first."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._entries: OrderedDict = OrderedDict()
        self.hits = 0

    def get(self, key, count: bool = True):
        entry = self._entries.get(key)
        if entry is not None and count:
            self.hits += 1
        return entry

    def put(self, key, value) -> None:
        if self.capacity <= 0:
            return
        entries = self._entries
        entries[key] = value
        if len(entries) > self.capacity:
            entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
