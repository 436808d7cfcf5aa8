"""What lc0's wrapper backends (roundrobin, multiplexing, demux) share: the
children built from an option tree, and a Backend base that hands work to them.

Children follow lc0 (src/neural/backends/network_rr.cc, network_mux.cc,
network_demux.cc): each sub-dictionary of the wrapper's options is one
child; its backend is its `backend` key (its own or inherited), else the
sub-dictionary's name when it has one (`cpu(threads=1)`), else `auto`. A
wrapper given no sub-dictionary has one child built from its own options.
A child receives every key it inherits or holds that its backend reads
(a backend module lists them in OPTIONS); a key that neither the wrapper
nor any child reads is an error, as in lc0. Each child is created through
the registry, so any backend (a wrapper too) can be a child.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from lc0_rocm.backends import options as opts
from lc0_rocm.backends.base import (DEFAULT_ATTRIBUTES, Backend, BackendAttributes, BackendError, NativeSlot,
                                    checked_packed, checked_planes, empty_outputs, slot_leaves)

# Threads 0 under roundrobin and multiplexing: two search threads per child,
# so each child has a batch at it while the next one is gathered.
THREADS_PER_CHILD = 2


@dataclasses.dataclass
class Child:
    label: str            # "child 1 (gpu=3)": how errors name it
    backend_name: str
    options: dict         # what the child backend was given
    settings: dict        # the child's values of the keys the wrapper reads
    backend: Backend | None = None


def child_label(index: int, name: str, own: dict, backend: str) -> str:
    shown = opts.format_options(own) or f"backend={backend}"
    named = "" if name.startswith("[") or not name else f" {name}"
    return f"child {index}{named} ({shown})"


def plan_children(wrapper: str, options: dict, child_keys: tuple[str, ...] = (),
                  root_keys: tuple[str, ...] = ()) -> tuple[list[Child], dict]:
    """The children `options` describes, without creating them, and the
    wrapper's own root-level settings. `child_keys` are keys the wrapper reads
    per child (inherited like any other), `root_keys` keys it reads only at
    its own level. Raises BackendError for keys nobody reads."""
    from lc0_rocm import backends

    values, subs = opts.split(options)
    root = {k: values.pop(k) for k in root_keys if k in values}
    if subs:
        specs = [(name, opts.child_options(values, own), own) for name, own in subs.items()]
    else:
        backend = values.get("backend", "auto")
        if backends.takes_children(backend):
            raise BackendError(f"{wrapper}: backend={backend} needs its own child options, "
                               f"e.g. backend={backend},(backend=cpu),(backend=cpu)")
        specs = [("", values, {})]
    children, used = [], {"backend", *child_keys}
    for index, (name, effective, own) in enumerate(specs):
        default = name if name and not name.startswith("[") else "auto"
        backend = str(effective.get("backend", default))
        label = child_label(index, name, own, backend)
        if backend not in backends.names():
            raise BackendError(f"{label}: unknown backend {backend!r}; known: {', '.join(backends.names())}")
        reads = backends.option_names(backend)
        given = {}
        for key, value in effective.items():
            if key == "backend":
                continue
            if isinstance(value, dict) or (key in reads if reads is not None else key not in child_keys):
                given[key] = value
        own_values, _ = opts.split(own)
        unread = sorted(set(own_values) - set(given) - used)
        if unread:
            raise BackendError(f"{label}: unknown option(s) {', '.join(unread)} for backend {backend}")
        used |= set(given)
        settings = {k: effective[k] for k in child_keys if k in effective}
        children.append(Child(label, backend, given, settings))
    unread = sorted(set(values) - used)
    if unread:
        raise BackendError(f"{wrapper}: unknown option(s) {', '.join(unread)} "
                           "(read neither by the wrapper nor by any child)")
    return children, root


def create_children(children: list[Child], weights) -> None:
    """Create each planned child through the registry; on a failure close
    the ones already made and raise one line naming the child."""
    from lc0_rocm import backends

    for child in children:
        try:
            child.backend = backends.create(child.backend_name, weights, **child.options)
        except Exception as e:  # noqa: BLE001 - any failure is reported with the child's name
            close_children(children)
            message = str(e)
            if child.backend_name not in message:
                message = f"{child.backend_name}: {message}"
            raise BackendError(f"{child.label}: {message}") from e


def close_children(children: list[Child]) -> None:
    for child in children:
        backend, child.backend = child.backend, None
        if backend is not None:
            backend.close()


def int_setting(child: Child, key: str, default: int, minimum: int) -> int:
    value = child.settings.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise BackendError(f"{child.label}: {key} must be an integer >= {minimum}, got {value!r}")
    return number


def child_slots(child: Child, count: int) -> list[NativeSlot] | None:
    """`count` native slots of a child's backend, or None when it has none."""
    take = getattr(child.backend, "native_slots", None)
    return take(count) if take else None


def slice_inputs(inputs: tuple, start: int, stop: int) -> tuple:
    return tuple(a[start:stop] for a in inputs)


def concat_outputs(parts: list[tuple]) -> tuple:
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


class WrapperBackend(Backend):
    """A Backend that spreads forward passes over child backends. Subclasses
    implement _dispatch(method, inputs, n) -> outputs."""

    kind = "?"

    def __init__(self, children: list[Child]):
        self.children = children
        self.name = f"{self.kind}({','.join(c.backend.name for c in children)})"

    @property
    def device_info(self) -> dict | None:
        """The first GPU child's device facts (what backendbench reports)."""
        return next((dict(c.backend.device_info) for c in self.children
                     if getattr(c.backend, "device_info", None)), None)

    def host_empty(self, shape, dtype=np.float32):
        """The first child's fastest host memory (page-locked memory from the
        native library serves every GPU)."""
        backend = self.children[0].backend
        if backend is None:
            raise BackendError(f"{self.name}: the backend is closed")
        return backend.host_empty(shape, dtype)

    def forward(self, planes):
        planes = checked_planes(planes)
        if len(planes) == 0:
            return empty_outputs()
        return self._dispatch("forward", (planes,), len(planes))

    def forward_packed(self, masks, values):
        masks, values = checked_packed(masks, values)
        if len(masks) == 0:
            return empty_outputs()
        return self._dispatch("forward_packed", (masks, values), len(masks))

    def _dispatch(self, method: str, inputs: tuple, n: int):
        raise NotImplementedError

    def child_attributes(self) -> list[BackendAttributes]:
        """Each child's attributes (the generic ones for a closed child)."""
        asks = [getattr(c.backend, "attributes", None) for c in self.children]
        return [ask() if ask else DEFAULT_ATTRIBUTES for ask in asks]

    def attributes(self) -> BackendAttributes:
        """Whole batches go to one child each: two search threads per child,
        batches sized for the first GPU child, no batch larger than the
        smallest child takes."""
        kids = self.child_attributes()
        gpus = [a for a in kids if not a.runs_on_cpu]
        return BackendAttributes(
            runs_on_cpu=not gpus, suggested_num_search_threads=THREADS_PER_CHILD * len(kids),
            recommended_batch_size=(gpus[0] if gpus else DEFAULT_ATTRIBUTES).recommended_batch_size,
            maximum_batch_size=min(a.maximum_batch_size for a in kids))

    def native_slots(self, count: int) -> list[NativeSlot] | None:
        """Whole batches to the children in turn (as roundrobin does): slot i
        belongs to child i mod children, at least one slot per child; None
        unless every child has native slots."""
        count = max(count, len(self.children))
        per_child = []
        for i, child in enumerate(self.children):
            slots = child_slots(child, count // len(self.children) + (i < count % len(self.children)))
            if slots is None:
                return None
            per_child.append(slots)
        return [per_child[i % len(per_child)][i // len(per_child)] for i in range(count)]

    @staticmethod
    def call(child: Child, method: str, inputs: tuple):
        """One child's forward pass; its failures name the child."""
        backend = child.backend
        if backend is None:
            raise BackendError(f"{child.label}: the backend is closed")
        try:
            return getattr(backend, method)(*inputs)
        except Exception as e:  # noqa: BLE001 - re-raised with the child's name
            raise BackendError(f"{child.label}: {e}") from e

    def release_slots(self, slots) -> None:
        leaves = slot_leaves(slots)
        for child in self.children:
            if child.backend is not None:
                child.backend.release_slots(leaves)

    def close(self) -> None:
        close_children(self.children)
