"""Leaf evaluation for the search: encode positions, run the network in one
batch, turn raw policy logits into lc0's priors; plus the NN cache.

`NetworkEvaluator` adapts a `lc0_rocm.network.Network`; tests may pass any
object with the same three methods (`prepare`, `run`, `has_moves_left`).
"""
from __future__ import annotations

from array import array
from collections import OrderedDict

import chess
import numpy as np

from lc0_rocm import encoder
from lc0_rocm.sizes import POLICY_SIZE
from lc0_rocm.search import leaf_planes


class NetworkEvaluator:
    """Batches leaves for `network.forward`."""

    def __init__(self, network):
        self._encoder = encoder
        self._leaf = leaf_planes
        self.network = network
        self.input_format = int(getattr(network, "input_format", 1))
        self.has_moves_left = bool(getattr(network, "has_moves_left", False))
        self._fast = self.input_format in leaf_planes.FAST_FORMATS
        self._hectoplies = encoder.is_hectoplies(self.input_format)

    def prepare(self, board: chess.Board, walker=None, moves=None):
        """-> (legal moves, request): the request is what run() needs later,
        taken now because the board will move on. With the search's walker
        (at `board`) classical formats skip python-chess's move stack."""
        if self._fast and walker is not None and not board.chess960:
            if moves is None:
                moves = list(board.legal_moves)
            masks, rule50 = self._leaf.planes_classical(walker, self.input_format)
            indices = self._leaf.policy_indices_classical(board, moves)
            return moves, (masks, rule50 / 100.0 if self._hectoplies else float(rule50), indices)
        masks, values, transform = self._encoder.encode_packed(board, self.input_format)
        if moves is not None and not board.chess960:
            # The legal moves are known: only their indices are needed.
            return moves, (masks, values, self._leaf.policy_indices_classical(board, moves, transform))
        found, indices = self._encoder.policy_indices(board, self.input_format, transform)
        return list(found), (masks, values, indices)

    def run(self, requests: list) -> list[tuple[np.ndarray, float, float, float]]:
        """-> per request: (logits of its legal moves, q, d, m), q and d from
        the side to move there."""
        if not requests:
            return []
        n = len(requests)
        masks = np.empty((n, 112), dtype=np.uint64)
        values = np.ones((n, 112), dtype=np.float32)
        for i, (m, v, _) in enumerate(requests):
            masks[i] = m
            if isinstance(v, float):
                values[i, 109] = v
            else:
                values[i] = v
        policy, wdl, moves_left = self._forward(masks, values)
        policy = np.asarray(policy, dtype=np.float32).reshape(len(requests), POLICY_SIZE)
        wdl = np.asarray(wdl, dtype=np.float32)
        moves_left = np.asarray(moves_left, dtype=np.float32).reshape(-1)
        out = []
        for i, (_, _, indices) in enumerate(requests):
            w, d, l = wdl[i].tolist()
            out.append((policy[i, indices], w - l, d, float(moves_left[i])))
        return out

    def _forward(self, masks, values):
        net = self.network
        if hasattr(net, "forward_packed"):
            return net.forward_packed(masks, values)
        from lc0_rocm.backends.base import unpack_planes
        return net.forward(unpack_planes(masks, values))


class NNCache:
    """lc0's NN cache: keyed by the position (board and repetition count),
    bounded, oldest entries dropped first. Values are (legal moves, stored
    priors, q, d, m); moves and priors are kept packed (about 10x smaller
    than Python lists: the default 2,000,000 entries must fit in memory)."""

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self._entries: OrderedDict = OrderedDict()
        self.hits = 0

    def get(self, key, count: bool = True):
        entry = self._entries.get(key)
        if entry is None:
            return None
        if count:
            self.hits += 1
        codes, priors, q, d, m = entry
        return [_decode(c) for c in codes], priors.tolist(), q, d, m

    def put(self, key, value) -> None:
        if self.capacity <= 0:
            return
        moves, priors, q, d, m = value
        entries = self._entries
        entries[key] = (array("H", [_encode(mv) for mv in moves]), array("f", priors), q, d, m)
        if len(entries) > self.capacity:
            entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_MOVES: dict[int, chess.Move] = {}


def _encode(move: chess.Move) -> int:
    return move.from_square | move.to_square << 6 | (move.promotion or 0) << 12


def _decode(code: int) -> chess.Move:
    """One shared chess.Move per code (moves are immutable)."""
    move = _MOVES.get(code)
    if move is None:
        move = _MOVES[code] = chess.Move(code & 63, (code >> 6) & 63, (code >> 12) or None)
    return move
