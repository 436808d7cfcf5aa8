"""A loaded network on a backend: positions in, policy and value out.

    net = load_network("maia-1900.pb.gz", backend="cpu")
    ev = net.evaluate(chess.Board())
    ev.policy[chess.Move.from_uci("e2e4")], ev.wdl, ev.q, ev.moves_left

`evaluate_batch` encodes all boards (lc0's compact masks/values), runs one
backend call per chunk, and turns the raw 1858 logits into a softmax over each
position's legal moves, keyed by the real-orientation chess.Move.
"""
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Iterable

import chess
import numpy as np

from lc0_rocm import encoder
from lc0_rocm.backends.base import POLICY_SIZE, NUM_PLANES, Backend
from lc0_rocm.weights import Weights, WeightsError, load_weights

if TYPE_CHECKING:
    from lc0_rocm.netspec import NetSpec

DEFAULT_CHUNK = 256   # positions per backend call in evaluate_batch
LARGE_NET_BYTES = 50_000_000   # files above this take seconds to load: show progress


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The network's view of one position, from the side to move: `policy`
    maps each legal move to its probability (softmax, temperature 1), `wdl`
    is (win, draw, loss) probabilities, `q` = win - loss in [-1, 1],
    `moves_left` the expected remaining plies (None without that head)."""

    policy: dict[chess.Move, float]   # legal moves -> probability (softmax, temperature 1)
    wdl: tuple[float, float, float]   # win, draw, loss
    moves_left: float | None          # plies; None when the net has no such head

    @property
    def q(self) -> float:
        """Expected score from the side to move, win - loss, in [-1, 1]."""
        return self.wdl[0] - self.wdl[2]

    @property
    def d(self) -> float:
        """Draw probability."""
        return self.wdl[1]


class Network:
    """One net on one backend. Use as a context manager or call close()."""

    def __init__(self, weights: Weights, backend: Backend, spec: NetSpec | None = None) -> None:
        from lc0_rocm.netspec import NetSpec

        self.weights = weights
        self.backend = backend
        self.spec = spec if spec is not None else NetSpec.from_weights(weights)
        self.input_format = int(weights.format.input)
        if self.input_format not in encoder.INPUT_FORMATS:
            raise WeightsError(f"{weights.path or 'network'}: input format {self.input_format} "
                               "is not supported by the encoder")
        self.has_moves_left = bool(self.spec.moves_left)
        self.closed = False

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N, 112, 8, 8) float32 planes -> (raw policy logits (N, 1858) in
        lc0's order, WDL probabilities (N, 3) from the side to move,
        moves-left in plies (N,), 0 without that head)."""
        self._check_open()
        planes = np.asarray(planes, dtype=np.float32)
        if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
            raise ValueError(f"planes must have shape (N, {NUM_PLANES}, 8, 8), got {planes.shape}")
        return self._checked(self.backend.forward(planes), len(planes))

    def forward_packed(self, masks: np.ndarray,
                       values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Same as forward() for (N, 112) uint64 masks and (N, 112) float32 values."""
        self._check_open()
        masks = np.asarray(masks, dtype=np.uint64)
        values = np.asarray(values, dtype=np.float32)
        if masks.ndim != 2 or masks.shape[1] != NUM_PLANES or values.shape != masks.shape:
            raise ValueError(f"masks and values must both have shape (N, {NUM_PLANES}), "
                             f"got {masks.shape} and {values.shape}")
        return self._checked(self.backend.forward_packed(masks, values), len(masks))

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"{self!r} is closed; load the network again to evaluate")

    def _checked(self, outputs, n: int):
        policy, wdl, moves_left = outputs
        if policy.shape != (n, POLICY_SIZE) or wdl.shape != (n, 3) or moves_left.shape != (n,):
            raise RuntimeError(f"backend {self.backend.name} returned shapes {policy.shape}, "
                               f"{wdl.shape}, {moves_left.shape} for {n} positions")
        return policy, wdl, moves_left

    def evaluate(self, board: chess.Board) -> Evaluation:
        """The net's view of `board` (its move stack is the history the net
        sees): policy over the legal moves, WDL and moves-left, from the
        side to move. Same as evaluate_batch([board])[0]."""
        return self.evaluate_batch([board])[0]

    def evaluate_batch(self, boards: Iterable[chess.Board],
                       chunk: int = DEFAULT_CHUNK) -> list[Evaluation]:
        """One Evaluation per board, in order; the boards go to the backend
        `chunk` at a time (one forward pass each), which is much faster than
        evaluate() in a loop on a GPU."""
        self._check_open()
        boards = list(boards)
        results: list[Evaluation] = []
        for start in range(0, len(boards), chunk):
            results += self._evaluate_chunk(boards[start:start + chunk])
        return results

    def _evaluate_chunk(self, boards: list[chess.Board]) -> list[Evaluation]:
        if not boards:
            return []
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

    def close(self) -> None:
        """Free the backend's memory (GPU buffers, native handles). The
        Network cannot evaluate afterwards; `with load_network(...) as net:`
        closes it for you."""
        if not self.closed:
            self.closed = True
            self.backend.close()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Network({self.weights.path or '?'}, backend={self.backend.name}, "
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


def load_network(path: str | os.PathLike[str] | Weights | None = None, backend: str = "auto",
                 backend_opts: str | dict | None = None, **options: object) -> Network:
    """Load an lc0 net (.pb.gz / .pb) onto a backend ("auto", "cpu", "rocm", ...).

    `path` is a file, or a name found the way lc0 finds nets (working
    directory, then the cache `lc0-rocm fetch-net` fills): "maia-1900" and
    "maia-1900.pb.gz" both find a fetched maia-1900. None (or
    "<autodiscover>") takes the default net. A missing net raises
    `netfiles.NetNotFoundError` (a FileNotFoundError) that names the places
    searched. `backend_opts` is lc0's --backend-opts string (or its parsed
    tree, backends.options.parse), e.g. for two GPUs
    `load_network(path, backend="demux", backend_opts="backend=rocm-fp16,(gpu=0),(gpu=1)")`;
    keyword `options` are added to its top level (cpu: threads, ...).
    """
    from lc0_rocm import backends, netfiles
    from lc0_rocm.backends import options as backend_options
    from lc0_rocm.progress import Progress

    tree = {}
    if backend_opts is not None:
        tree = backend_options.parse(backend_opts) if isinstance(backend_opts, str) else dict(backend_opts)
    tree = backend_options.merge(tree, options)
    if isinstance(path, Weights):
        weights = path
        netfiles.note_if_test_net(weights.license, weights.path)
        return Network(weights, backends.create(backend, weights, **tree))
    file = netfiles.resolve_weights(path)
    size = os.path.getsize(file)
    if size < LARGE_NET_BYTES:
        weights = load_weights(file)
        netfiles.note_if_test_net(weights.license, weights.path)
        return Network(weights, backends.create(backend, weights, **tree))
    with Progress(f"loading {os.path.basename(file)}") as progress:   # bt4: ~5 s
        progress.phase(f"reading {size / 1e6:.0f} MB of weights")
        weights = load_weights(file)
        netfiles.note_if_test_net(weights.license, weights.path)
        progress.phase(f"setting up backend {backend}")
        network = Network(weights, backends.create(backend, weights, **tree))
        progress.phase("ready")
    return network
