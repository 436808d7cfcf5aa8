"""`roundrobin`: lc0's wrapper that sends each whole batch to the next child.

    --backend=roundrobin --backend-opts="backend=cuda-fp16,(gpu=0),(gpu=1)"

Calls from several threads run on different children at once (the counter
is the only shared state; no lock is held around a forward pass), so a
search with two batches in flight keeps two GPUs busy. Options: `backend`
per child (see backends.children); everything else goes to the children.
"""
from __future__ import annotations

import itertools

from lc0_rocm.backends.children import WrapperBackend, create_children, plan_children

TAKES_CHILDREN = True


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def create(name: str, weights, **options) -> "RoundRobinBackend":
    children, _ = plan_children(name, options)
    create_children(children, weights)
    return RoundRobinBackend(children)


class RoundRobinBackend(WrapperBackend):
    kind = "roundrobin"

    def __init__(self, children):
        super().__init__(children)
        self._counter = itertools.count()   # next() is atomic under the GIL

    def _dispatch(self, method, inputs, n):
        child = self.children[next(self._counter) % len(self.children)]
        return self.call(child, method, inputs)
