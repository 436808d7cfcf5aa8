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

import concurrent.futures
import dataclasses
import os
from typing import TYPE_CHECKING, Iterable

import chess
import numpy as np

from lc0_rocm import encoder
from lc0_rocm.backends.base import Backend, checked_outputs, checked_packed, checked_planes
from lc0_rocm.errors import ClosedError, InvalidArgumentError
from lc0_rocm.sizes import POLICY_SIZE
from lc0_rocm.weights import Weights, WeightsError, load_weights

if TYPE_CHECKING:
    from lc0_rocm.netspec import NetSpec

DEFAULT_CHUNK = 256   # positions per backend call in evaluate_batch
LARGE_NET_BYTES = 50_000_000   # files above this take seconds to load: show progress


class _PolicyField:
    """Evaluation.policy: a plain dict, which the native path builds on first
    read (hashing ~30 chess.Moves into a dict costs more than the rest of an
    evaluation; many callers read only the value)."""

    def __get__(self, ev, owner=None):
        if ev is None:
            raise AttributeError("policy")   # no default for dataclasses
        state = ev.__dict__
        policy = state.get("_policy")
        if policy is None:
            source = state.get("_policy_source")
            if source is None:          # another thread built it meanwhile
                return state["_policy"]
            moves, probs, start, end = source
            policy = dict(zip(map(_move_of_code(), moves[start:end]), probs[start:end]))
            state["_policy"] = policy   # set before the source goes: a racing reader finds one
            state.pop("_policy_source", None)
        return policy

    def __set__(self, ev, policy):
        ev.__dict__["_policy"] = policy


def _move_of_code():
    from lc0_rocm import native_encoder
    return native_encoder.move_table().__getitem__


# What python-chess flags but lc0 (and the search) play from all the same.
_TOLERATED_STATUS = (chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK
                     | chess.STATUS_INVALID_EP_SQUARE | chess.STATUS_BAD_CASTLING_RIGHTS)


def _check_playable(board: chess.Board) -> None:
    """ValueError for a board the search refuses (Engine.search's rule)."""
    if not isinstance(board, chess.Board):
        raise TypeError(f"evaluate needs chess.Board objects, got {type(board).__name__}")
    bad = board.status() & ~_TOLERATED_STATUS
    if bad:
        problems = sorted(name[len("STATUS_"):].lower().replace("_", " ") for name in dir(chess)
                          if name.startswith("STATUS_") and getattr(chess, name) & bad)
        raise InvalidArgumentError(f"invalid position {board.fen()}: {', '.join(problems)}")


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The network's view of one position, from the side to move: `policy`
    maps each legal move to its probability (softmax, temperature 1), `wdl`
    is (win, draw, loss) probabilities, `q` = win - loss in [-1, 1],
    `moves_left` the expected remaining plies (None without that head).

    A finished game (no legal move) is not sent to the net: `terminal` says
    "checkmate" or "stalemate", `wdl` is the result ((0, 0, 1) for the mated
    side to move, (0, 1, 0) for stalemate, as the search scores them),
    `policy` is empty and `moves_left` 0 (None without that head); else
    `terminal` is None."""

    policy: dict[chess.Move, float] = _PolicyField()   # legal moves -> probability (softmax, temperature 1)
    wdl: tuple[float, float, float]   # win, draw, loss
    moves_left: float | None          # plies; None when the net has no such head
    terminal: str | None = None       # "checkmate" or "stalemate": the game is over here

    @classmethod
    def _with_lazy_policy(cls, move_codes: list, probs: list, start: int, end: int,
                          wdl, moves_left) -> "Evaluation":
        """An Evaluation whose policy is built on first read from the native
        core's 16-bit moves (lc0_rocm.native_encoder) and probabilities at
        [start, end) of lists its chunk's evaluations share."""
        ev = cls.__new__(cls)
        ev.__dict__.update(_policy_source=(move_codes, probs, start, end), wdl=wdl,
                           moves_left=moves_left)
        return ev

    def __getstate__(self):
        """Pickles and copies hold the built policy, not the shared lists."""
        self.policy   # noqa: B018 (builds it)
        return self.__dict__

    @property
    def q(self) -> float:
        """Expected score from the side to move, win - loss, in [-1, 1]."""
        return self.wdl[0] - self.wdl[2]

    @property
    def d(self) -> float:
        """Draw probability."""
        return self.wdl[1]


class Network:
    """One net on one backend. Use as a context manager or call close().

    `weights` may be None for a backend that needs no net (`random`): the
    input format is then the backend's and `spec` is None.
    `use_native_core` (default True) lets evaluate_batch use the native
    core when it is available; False keeps to the Python encoder.
    `overlap_chunks`: evaluate_batch runs the forward pass of one chunk on a
    worker thread while it encodes the next; None (default) does so for GPU
    backends only (their forward pass waits on the device without the GIL;
    a CPU backend's would compete with the encoding for the cores)."""

    use_native_core = True
    overlap_chunks: bool | None = None

    def __init__(self, weights: Weights | None, backend: Backend,
                 spec: NetSpec | None = None) -> None:
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
        self.closed = False

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N, 112, 8, 8) float32 planes -> (raw policy logits (N, 1858) in
        lc0's order, WDL probabilities (N, 3) from the side to move,
        moves-left in plies (N,), 0 without that head)."""
        self._check_open()
        planes = checked_planes(planes)
        return self._checked(self.backend.forward(planes), len(planes))

    def forward_packed(self, masks: np.ndarray,
                       values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Same as forward() for (N, 112) uint64 masks and (N, 112) float32 values."""
        self._check_open()
        masks, values = checked_packed(masks, values)
        return self._checked(self.backend.forward_packed(masks, values), len(masks))

    def host_empty(self, shape, dtype=np.float32) -> np.ndarray:
        """An uninitialised array in the memory this network's backend moves
        fastest (page-locked on GPU backends): inputs and outputs kept there
        and reused skip a host copy per call (forward_packed_into)."""
        self._check_open()
        return self.backend.host_empty(shape, dtype)

    def forward_into(self, planes: np.ndarray, out: tuple) -> tuple:
        """forward() with the outputs written into `out` = (policy (N, 1858),
        wdl (N, 3), moves_left (N,)), C-contiguous float32 arrays, e.g. from
        host_empty() and reused from call to call; returns `out`."""
        self._check_open()
        planes = checked_planes(planes)
        return self.backend.forward_into(planes, checked_outputs(out, len(planes)))

    def forward_packed_into(self, masks: np.ndarray, values: np.ndarray, out: tuple) -> tuple:
        """forward_packed() into `out`, as forward_into()."""
        self._check_open()
        masks, values = checked_packed(masks, values)
        return self.backend.forward_packed_into(masks, values, checked_outputs(out, len(masks)))

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError(f"{self!r} is closed; load the network again to evaluate")

    def _checked(self, outputs, n: int):
        policy, wdl, moves_left = outputs
        if policy.shape != (n, POLICY_SIZE) or wdl.shape != (n, 3) or moves_left.shape != (n,):
            raise RuntimeError(f"backend {self.backend.name} returned shapes {policy.shape}, "
                               f"{wdl.shape}, {moves_left.shape} for {n} positions")
        return policy, wdl, moves_left

    def evaluate(self, board: chess.Board) -> Evaluation:
        """The net's view of `board` (its move stack is the history the net
        sees): policy over the legal moves, WDL and moves-left, from the
        side to move. Same as evaluate_batch([board])[0]: a finished game
        gets its result (Evaluation.terminal), an impossible position (no
        king, a pawn on the first rank, ...) a ValueError."""
        return self.evaluate_batch([board])[0]

    def evaluate_batch(self, boards: Iterable[chess.Board],
                       chunk: int = DEFAULT_CHUNK) -> list[Evaluation]:
        """One Evaluation per board, in order; the boards go to the backend
        `chunk` at a time (one forward pass each), which is much faster than
        evaluate() in a loop on a GPU. Boards with no legal move get their
        result without the net (Evaluation.terminal); a position the search
        would refuse (no king, pawns on the first rank, the side not to move
        in check, ...) is a ValueError naming it."""
        self._check_open()
        if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
            raise InvalidArgumentError(f"chunk must be a positive number of boards, got {chunk!r}")
        boards = list(boards)
        chunks = [boards[start:start + chunk] for start in range(0, len(boards), chunk)]
        overlap = self.overlap_chunks
        if overlap is None:   # a CPU backend's pass would compete with the encoding for the cores
            attributes = getattr(self.backend, "attributes", None)
            overlap = callable(attributes) and not attributes().runs_on_cpu
        if len(chunks) < 2 or not overlap:
            return [ev for c in chunks for ev in self._finish(self._prepare(c))]
        # The backend's forward pass of one chunk (native code, no GIL) runs on
        # a worker thread while this thread encodes the next chunk and unpacks
        # the previous one.
        results: list[Evaluation] = []
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lc0-rocm-forward") as worker:
            prepared = self._prepare(chunks[0])
            running = worker.submit(self.forward_packed, prepared.masks, prepared.values)
            for c in chunks[1:]:
                upcoming = self._prepare(c)
                outputs = running.result()
                running = worker.submit(self.forward_packed, upcoming.masks, upcoming.values)
                results += self._finish(prepared, outputs)
                prepared = upcoming
            results += self._finish(prepared, running.result())
        return results

    def _prepare(self, boards: list[chess.Board]) -> "_Chunk":
        """Encode a chunk: by the native core when it is available (boards it
        refuses by the Python encoder, with its errors), else in Python."""
        batch = None
        if self.use_native_core:
            from lc0_rocm import native_encoder
            batch = native_encoder.encode_boards(boards, self.input_format)
        if batch is None:
            for board in boards:
                _check_playable(board)
            masks, values, transforms = encoder.encode_batch_packed(boards, self.input_format)
            return _Chunk(boards, masks, values, transforms, None)
        for i in batch.refused:
            _check_playable(boards[i])
            batch.masks[i], batch.values[i], batch.transforms[i] = encoder.encode_packed(
                boards[i], self.input_format)
        return _Chunk(boards, batch.masks, batch.values, batch.transforms, batch)

    def _finish(self, chunk: "_Chunk", outputs=None) -> list[Evaluation]:
        """Evaluations of a prepared chunk from the backend's outputs (run
        here when not given)."""
        if not chunk.boards:
            return []
        if outputs is None:
            outputs = self.forward_packed(chunk.masks, chunk.values)
        logits, wdl, moves_left = outputs
        wdl = wdl.astype(np.float64).tolist()
        moves_left = moves_left.astype(np.float64).tolist() if self.has_moves_left else None
        if chunk.batch is None:
            return self._finish_python(chunk.boards, chunk.transforms, logits, wdl, moves_left)
        return self._finish_native(chunk.boards, chunk.batch, logits, wdl, moves_left)

    def _finish_python(self, boards, transforms, logits, wdl, moves_left) -> list[Evaluation]:
        per_board = [encoder.policy_indices(b, self.input_format, int(t))
                     for b, t in zip(boards, transforms)]
        probs = _legal_softmax(logits, [indices for _, indices in per_board])
        return [
            Evaluation(policy=dict(zip(moves, p.tolist())), wdl=tuple(wdl[i]),
                       moves_left=moves_left[i] if moves_left is not None else None)
            if moves else self._terminal(boards[i])
            for i, ((moves, _), p) in enumerate(zip(per_board, probs))
        ]

    def _terminal(self, board: chess.Board) -> Evaluation:
        """A board with no legal move: its result, as the search scores it."""
        mated = board.is_check()
        return Evaluation(policy={}, wdl=(0.0, 0.0, 1.0) if mated else (0.0, 1.0, 0.0),
                          moves_left=0.0 if self.has_moves_left else None,
                          terminal="checkmate" if mated else "stalemate")

    def _finish_native(self, boards, batch, logits, wdl, moves_left) -> list[Evaluation]:
        from lc0_rocm import native_encoder

        refused = {i: encoder.policy_indices(boards[i], self.input_format, int(batch.transforms[i]))
                   for i in batch.refused}
        if refused:
            rows = list(refused)
            refused_probs = dict(zip(rows, _legal_softmax(
                logits[rows], [indices for _, indices in refused.values()])))
        probs = batch.legal_softmax(logits).tolist()
        legal = batch.legal[:len(probs)].tolist()
        offsets = batch.offsets.tolist()
        native_encoder.move_table()   # built here, not on a caller's first read
        results = []
        lazy = Evaluation._with_lazy_policy
        for i in range(len(boards)):
            ml = moves_left[i] if moves_left is not None else None
            if i in refused:
                if not refused[i][0]:
                    results.append(self._terminal(boards[i]))
                    continue
                results.append(Evaluation(policy=dict(zip(refused[i][0], refused_probs[i].tolist())),
                                          wdl=tuple(wdl[i]), moves_left=ml))
            elif offsets[i] == offsets[i + 1]:
                results.append(self._terminal(boards[i]))
            else:
                results.append(lazy(legal, probs, offsets[i], offsets[i + 1], tuple(wdl[i]), ml))
        return results

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
        path = (self.weights.path or "?") if self.weights is not None else "no net"
        return (f"Network({path}, backend={self.backend.name}, "
                f"input_format={self.input_format})")


@dataclasses.dataclass
class _Chunk:
    """A chunk of boards encoded for the backend; `batch` is the native
    core's encoding (native_encoder.BoardBatch), None on the Python path."""

    boards: list
    masks: np.ndarray
    values: np.ndarray
    transforms: np.ndarray
    batch: object


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
    searched. With backend "random", `path` None means no net (the
    classical input format, or the backend's `input_mode`). `backend_opts`
    is lc0's --backend-opts string (or its parsed tree,
    backends.options.parse), e.g. for two GPUs
    `load_network(path, backend="demux", backend_opts="backend=rocm-fp16,(gpu=0),(gpu=1)")`;
    keyword `options` are added to its top level (cpu: threads, ...).
    """
    from lc0_rocm import backends, netfiles
    from lc0_rocm.backends import options as backend_options
    from lc0_rocm.progress import Progress

    if not (path is None or isinstance(path, (str, os.PathLike, Weights))):
        raise TypeError(f"load_network() takes a net file's path or name, got {type(path).__name__} {path!r}")
    if not (backend_opts is None or isinstance(backend_opts, (str, dict))):
        raise TypeError(f"backend_opts must be lc0's option string (or its parsed dict), got "
                        f"{type(backend_opts).__name__} {backend_opts!r}")
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a backend's name, got {type(backend).__name__} {backend!r}")
    tree = {}
    if backend_opts is not None:
        tree = backend_options.parse(backend_opts) if isinstance(backend_opts, str) else dict(backend_opts)
    tree = backend_options.merge(tree, options)
    if isinstance(path, Weights):
        weights = path
        netfiles.note_if_test_net(weights.license, weights.path)
        return Network(weights, backends.create(backend, weights, **tree))
    if path is None and backend == "random":
        return Network(None, backends.create(backend, None, **tree))
    file = netfiles.resolve_weights(path)
    size = os.path.getsize(file)
    # The GPU's library and runtime start while the weights are read. A GPU
    # backend (likely under auto) takes big layers undecoded: no float32
    # copy of a big net (t82's read 0.35 s against 0.42, 401 MiB against 616
    # on the project's VM); backends.create decodes them for the others.
    preparing = backends.prepare_in_background(backend, tree)
    keep = backend == "auto" or backends.takes_linear16(backend)
    if size < LARGE_NET_BYTES:
        weights = load_weights(file, keep_linear16=keep)
        netfiles.note_if_test_net(weights.license, weights.path)
        if preparing is not None:
            preparing.join()
        return Network(weights, backends.create(backend, weights, **tree))
    with Progress(f"loading {os.path.basename(file)}") as progress:   # bt4: ~5 s
        progress.phase(f"reading {size / 1e6:.0f} MB of weights")
        weights = load_weights(file, keep_linear16=keep)
        netfiles.note_if_test_net(weights.license, weights.path)
        progress.phase(f"setting up backend {backend}")
        if preparing is not None:
            preparing.join()
        network = Network(weights, backends.create(backend, weights, **tree))
        progress.phase("ready")
    return network
