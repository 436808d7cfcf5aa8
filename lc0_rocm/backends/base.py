"""What every backend provides: a batched forward pass over input planes."""
from __future__ import annotations

import abc

import numpy as np

NUM_PLANES = 112
POLICY_SIZE = 1858


class BackendError(Exception):
    """A backend that cannot be created or cannot run."""


class Backend(abc.ABC):
    """One evaluator of one network.

    forward() takes planes (N, 112, 8, 8) float32 and returns
      policy logits (N, 1858) float32, raw (no softmax), lc0's policy order;
      wdl (N, 3) float32 probabilities (win, draw, loss) for the side to move;
      moves left (N,) float32 in plies (zeros when the net has no such head).
    """

    name: str = "?"

    @abc.abstractmethod
    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ...

    def forward_packed(self, masks: np.ndarray, values: np.ndarray):
        """Same as forward() for lc0's compact input: (N, 112) uint64 masks
        (bit i = square i) and (N, 112) float32 values. GPU backends
        override this to send 1 KB per position instead of 28 KB."""
        return self.forward(unpack_planes(masks, values))

    def close(self) -> None:
        """Release what the backend holds (device memory, threads)."""


def checked_planes(planes) -> np.ndarray:
    """`planes` as contiguous float32 (N, 112, 8, 8); ValueError otherwise."""
    planes = np.ascontiguousarray(planes, dtype=np.float32)
    if planes.ndim != 4 or planes.shape[1:] != (NUM_PLANES, 8, 8):
        raise ValueError(f"planes must have shape (N, {NUM_PLANES}, 8, 8), got {planes.shape}")
    return planes


def checked_packed(masks, values) -> tuple[np.ndarray, np.ndarray]:
    """lc0's packed input as contiguous (N, 112) uint64 masks and float32
    values; ValueError otherwise."""
    masks = np.ascontiguousarray(masks, dtype=np.uint64)
    values = np.ascontiguousarray(values, dtype=np.float32)
    if masks.ndim != 2 or masks.shape[1] != NUM_PLANES or values.shape != masks.shape:
        raise ValueError(f"masks and values must both have shape (N, {NUM_PLANES}), "
                         f"got {masks.shape} and {values.shape}")
    return masks, values


def unpack_planes(masks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(N, 112) masks and values -> (N, 112, 8, 8) float32 planes."""
    masks = np.ascontiguousarray(masks, dtype="<u8")
    bits = np.unpackbits(masks.view(np.uint8).reshape(*masks.shape, 8),
                         axis=-1, bitorder="little")
    planes = bits.reshape(*masks.shape, 8, 8).astype(np.float32)
    return planes * np.asarray(values, dtype=np.float32)[..., None, None]


def wdl_from_classical(q: np.ndarray) -> np.ndarray:
    """Classical value head (q in [-1, 1]) as (w, d, l) with no draw mass."""
    q = np.asarray(q, dtype=np.float32)
    return np.stack([(1 + q) / 2, np.zeros_like(q), (1 - q) / 2], axis=-1)
