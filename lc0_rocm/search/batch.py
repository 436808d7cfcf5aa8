"""What one gather of the Python search produces: the picked leaves
(`Visit`, lc0's NodeToProcess) and the minibatch around them (`Batch`)."""
from __future__ import annotations


class Visit:
    """One picked leaf (lc0's NodeToProcess): a real visit or a collision."""
    __slots__ = ("node", "depth", "multivisit", "maxvisit", "collision", "nn_slot",
                 "ooo_done", "q", "d", "m", "moves", "key")

    def __init__(self, node: int, depth: int, collision: bool = False,
                 multivisit: int = 1, maxvisit: int = 0):
        self.node = node
        self.depth = depth
        self.collision = collision
        self.multivisit = multivisit
        self.maxvisit = maxvisit
        self.nn_slot = -1          # index into the NN batch, or -1
        self.ooo_done = False      # evaluated out of order (terminal or cache hit)
        self.q = self.d = self.m = 0.0
        self.moves = None
        self.key = None


class Batch:
    """One gathered minibatch: its visits (and collisions), the network
    requests, the prefetched positions, the out-of-order count."""
    __slots__ = ("visits", "requests", "prefetch", "ooo", "seconds")

    def __init__(self, visits, requests, prefetch, ooo):
        self.visits = visits
        self.requests = requests
        self.prefetch = prefetch
        self.ooo = ooo
        self.seconds = 0.0
