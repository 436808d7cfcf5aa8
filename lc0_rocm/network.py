"""A loaded network on a backend: positions in, policy and value out.

    net = load_network("maia-1900.pb.gz", backend="cpu")
    ev = net.evaluate(chess.Board())
    ev.policy[chess.Move.from_uci("e2e4")], ev.wdl, ev.q, ev.moves_left

`evaluate_batch` encodes all boards (lc0's compact masks/values), runs one
backend call per chunk, and turns the raw 1858 logits into a softmax over each
position's legal moves, keyed by the real-orientation chess.Move. With the
native core (lc0_rocm.native_core) the encoding, legal moves, policy indices
and softmax of a chunk are one native call each (lc0_rocm.native_encoder);
without it, or for a board the core refuses, the Python encoder does them,
with the same results.
"""
from __future__ import annotations

import dataclasses
import os

import chess
import numpy as np

from lc0_rocm import encoder
from lc0_rocm.backends.base import POLICY_SIZE, NUM_PLANES, Backend
from lc0_rocm.weights import Weights, WeightsError, load_weights

DEFAULT_CHUNK = 256   # positions per backend call in evaluate_batch


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The network's view of one position, from the side to move."""

    policy: dict[chess.Move, float]   # legal moves -> probability (softmax, temperature 1)
    wdl: tuple[float, float, float]   # win, draw, loss
    moves_left: float | None          # plies; None when the net has no such head

    @property
    def q(self) -> float:
        return self.wdl[0] - self.wdl[2]

    @property
    def d(self) -> float:
        return self.wdl[1]


class Network:
    """One net on one backend. Use as a context manager or call close().

    `weights` may be None for a backend that needs no net (`random`): the
    input format is then the backend's and `spec` is None.
    `use_native_core` (default True) lets evaluate_batch use the native
    core when it is available; False keeps to the Python encoder."""

    use_native_core = True

    def __init__(self, weights: Weights | None, backend: Backend, spec=None):
        from lc0_rocm.netspec import NetSpec

        self.weights = weights
        self.backend = backend
        if weights is None:
            self.spec = spec
            self.input_format = int(getattr(backend, "input_format", encoder.INPUT_CLASSICAL))
        else:
            self.spec = spec if spec is not None else NetSpec.from_weights(weights)
            # A backend may encode for a format of its own (random's input_mode).
            self.input_format = int(getattr(backend, "input_format", weights.format.input))
        if self.input_format not in encoder.INPUT_FORMATS:
            where = weights.path if weights is not None and weights.path else "network"
            raise WeightsError(f"{where}: input format {self.input_format} "
                               "is not supported by the encoder")
        self.has_moves_left = (self.spec is not None and bool(self.spec.moves_left)
                               and getattr(backend, "has_moves_left", True))

    def forward(self, planes: np.ndarray):
        """(N, 112, 8, 8) planes -> (policy logits (N, 1858), wdl (N, 3), moves_left (N,))."""
        planes = np.asarray(planes, dtype=np.float32)
        if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
            raise ValueError(f"planes must have shape (N, {NUM_PLANES}, 8, 8), got {planes.shape}")
        return self._checked(self.backend.forward(planes), len(planes))

    def forward_packed(self, masks: np.ndarray, values: np.ndarray):
        """Same as forward() for (N, 112) uint64 masks and (N, 112) float32 values."""
        masks = np.asarray(masks, dtype=np.uint64)
        values = np.asarray(values, dtype=np.float32)
        if masks.ndim != 2 or masks.shape[1] != NUM_PLANES or values.shape != masks.shape:
            raise ValueError(f"masks and values must both have shape (N, {NUM_PLANES}), "
                             f"got {masks.shape} and {values.shape}")
        return self._checked(self.backend.forward_packed(masks, values), len(masks))

    def _checked(self, outputs, n: int):
        policy, wdl, moves_left = outputs
        if policy.shape != (n, POLICY_SIZE) or wdl.shape != (n, 3) or moves_left.shape != (n,):
            raise RuntimeError(f"backend {self.backend.name} returned shapes {policy.shape}, "
                               f"{wdl.shape}, {moves_left.shape} for {n} positions")
        return policy, wdl, moves_left

    def evaluate(self, board: chess.Board) -> Evaluation:
        return self.evaluate_batch([board])[0]

    def evaluate_batch(self, boards, chunk: int = DEFAULT_CHUNK) -> list[Evaluation]:
        boards = list(boards)
        results: list[Evaluation] = []
        for start in range(0, len(boards), chunk):
            results += self._evaluate_chunk(boards[start:start + chunk])
        return results

    def _evaluate_chunk(self, boards: list[chess.Board]) -> list[Evaluation]:
        if not boards:
            return []
        batch = None
        if self.use_native_core:
            from lc0_rocm import native_encoder
            batch = native_encoder.encode_boards(boards, self.input_format)
        if batch is None:
            return self._evaluate_chunk_python(boards)
        return self._evaluate_chunk_native(boards, batch)

    def _evaluate_chunk_python(self, boards: list[chess.Board]) -> list[Evaluation]:
        masks, values, transforms = encoder.encode_batch_packed(boards, self.input_format)
        logits, wdl, moves_left = self.forward_packed(masks, values)
        per_board = [encoder.policy_indices(b, self.input_format, int(t))
                     for b, t in zip(boards, transforms)]
        probs = _legal_softmax(logits, [indices for _, indices in per_board])
        wdl = wdl.astype(np.float64).tolist()
        moves_left = moves_left.astype(np.float64).tolist()
        return [
            Evaluation(policy=dict(zip(moves, p.tolist())), wdl=tuple(wdl[i]),
                       moves_left=moves_left[i] if self.has_moves_left else None)
            for i, ((moves, _), p) in enumerate(zip(per_board, probs))
        ]

    def _evaluate_chunk_native(self, boards: list[chess.Board], batch) -> list[Evaluation]:
        from lc0_rocm import native_encoder

        # Boards the core refused: the Python encoder (and its errors), as before.
        for i in batch.refused:
            batch.masks[i], batch.values[i], batch.transforms[i] = encoder.encode_packed(
                boards[i], self.input_format)
        logits, wdl, moves_left = self.forward_packed(batch.masks, batch.values)
        refused = {i: encoder.policy_indices(boards[i], self.input_format, int(batch.transforms[i]))
                   for i in batch.refused}
        if refused:
            rows = list(refused)
            refused_probs = dict(zip(rows, _legal_softmax(
                logits[rows], [indices for _, indices in refused.values()])))
        probs = batch.legal_softmax(logits).tolist()
        legal = batch.legal[:len(probs)].tolist()
        offsets = batch.offsets.tolist()
        move_of = native_encoder.move_table().__getitem__
        wdl = wdl.astype(np.float64).tolist()
        moves_left = moves_left.astype(np.float64).tolist() if self.has_moves_left else None
        results = []
        for i in range(len(boards)):
            if i in refused:
                policy = dict(zip(refused[i][0], refused_probs[i].tolist()))
            else:
                start, end = offsets[i], offsets[i + 1]
                policy = dict(zip(map(move_of, legal[start:end]), probs[start:end]))
            results.append(Evaluation(policy=policy, wdl=tuple(wdl[i]),
                                      moves_left=moves_left[i] if moves_left is not None else None))
        return results

    def close(self) -> None:
        self.backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self) -> str:
        path = (self.weights.path or "?") if self.weights is not None else "no net"
        return (f"Network({path}, backend={self.backend.name}, "
                f"input_format={self.input_format})")


def _legal_softmax(logits: np.ndarray, indices: list[np.ndarray]) -> list[np.ndarray]:
    """Softmax of each row's logits over its own legal-move indices, all rows at once."""
    counts = np.array([len(ix) for ix in indices], dtype=np.int64)
    if counts.sum() == 0:
        return [np.zeros(0, np.float32) for _ in indices]
    rows = np.repeat(np.arange(len(indices)), counts)
    picked = logits[rows, np.concatenate(indices)].astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    nonempty = counts > 0
    row_max = np.zeros(len(indices))
    row_max[nonempty] = np.maximum.reduceat(picked, starts[nonempty])
    exp = np.exp(picked - row_max[rows])
    row_sum = np.ones(len(indices))
    row_sum[nonempty] = np.add.reduceat(exp, starts[nonempty])
    probs = (exp / row_sum[rows]).astype(np.float32)
    return np.split(probs, np.cumsum(counts)[:-1])


def load_network(path=None, backend: str = "auto", **options) -> Network:
    """Load an lc0 net (.pb.gz / .pb) onto a backend ("auto", "cpu", "rocm", ...).

    `path` None (or "<autodiscover>") looks for a net the way lc0 does; see
    lc0_rocm.netfiles. With backend "random", `path` None means no net (the
    classical input format, or the backend's `input_mode`). `options` go to
    the backend.
    """
    from lc0_rocm import backends

    if isinstance(path, Weights):
        weights = path
    elif path is None and backend == "random":
        weights = None
    else:
        weights = load_weights(_resolve_path(path))
    return Network(weights, backends.create(backend, weights, **options))


def _resolve_path(path) -> str:
    if path is not None and str(path).strip() not in ("", "<autodiscover>"):
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"network file not found: {path}")
        return path
    from lc0_rocm import netfiles
    return os.fspath(netfiles.resolve_weights(None))
