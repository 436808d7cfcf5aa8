"""Backend registry: names -> factories, with a priority for `auto`.

A backend module is imported only when its name is asked for, so a machine
without a GPU toolchain never touches the native library.
"""
from __future__ import annotations

import dataclasses
import importlib
import sys
import threading

from lc0_rocm.backends.base import Backend, BackendError


@dataclasses.dataclass(frozen=True)
class BackendEntry:
    name: str
    module: str          # module whose create(name, weights, **options) builds it
    priority: int        # higher wins for `auto` among available ones
    description: str


_ENTRIES = [
    BackendEntry("cpu", "lc0_rocm.backends.cpu", 0, "numpy reference (float32)"),
    BackendEntry("random", "lc0_rocm.backends.random", 0,
                 "lc0's random net: outputs hashed from the input (tests, timing; no net needed)"),
    BackendEntry("sim", "lc0_rocm.backends.sim", 0,
                 "a simulated GPU: the random net's outputs timed by a GPU's batch curve (search studies)"),
    BackendEntry("rocm", "lc0_rocm.backends.native", 0, "AMD GPU, HIP, float32"),
    BackendEntry("rocm-fp16", "lc0_rocm.backends.native", 0, "AMD GPU, HIP, float16"),
    BackendEntry("rocm-auto", "lc0_rocm.backends.native", 100, "AMD GPU, fp16 where fast"),
    BackendEntry("cuda", "lc0_rocm.backends.native", 0, "NVIDIA GPU, same source, float32"),
    BackendEntry("cuda-fp16", "lc0_rocm.backends.native", 0, "NVIDIA GPU, float16"),
    BackendEntry("cuda-auto", "lc0_rocm.backends.native", 90, "NVIDIA GPU, fp16 where fast"),
    # lc0's wrappers over child backends (several GPUs); never picked by `auto`
    BackendEntry("roundrobin", "lc0_rocm.backends.roundrobin", 0, "each batch to the next child"),
    BackendEntry("multiplexing", "lc0_rocm.backends.multiplexing", 0,
                 "batches of several threads merged, run by per-child threads"),
    BackendEntry("demux", "lc0_rocm.backends.demux", 0, "each batch split over the children"),
]
REGISTRY = {e.name: e for e in _ENTRIES}


def names() -> list[str]:
    return list(REGISTRY) + ["auto"]


def _module(entry: BackendEntry):
    return importlib.import_module(entry.module)


def is_available(name: str) -> tuple[bool, str]:
    """(usable here?, reason when not)."""
    entry = REGISTRY.get(name)
    if entry is None:
        return False, f"unknown backend {name!r}; known: {', '.join(names())}"
    try:
        return _module(entry).is_available(name)
    except ImportError as e:
        return False, f"{name}: {e}"


def resolve(name: str) -> str:
    """Turn `auto` into the best available backend name."""
    if name != "auto":
        if name not in REGISTRY:
            raise BackendError(f"unknown backend {name!r}; known: {', '.join(names())}")
        return name
    best = max(
        (e for e in _ENTRIES if e.priority > 0 and is_available(e.name)[0]),
        key=lambda e: e.priority, default=None,
    )
    if best is None:
        return "cpu"
    return best.name


def auto_fallback_note() -> str:
    """Why `auto` is using cpu, one line with every GPU backend's reason."""
    reasons = [is_available(e.name)[1] for e in _ENTRIES if e.priority > 0]
    reasons = [r for r in reasons if r] or ["no GPU backend available"]
    no_gpu = all("GPU found" in r for r in reasons)
    return f"{'no GPU found' if no_gpu else 'no GPU backend'}, using cpu ({'; '.join(reasons)})"


def option_names(name: str) -> frozenset | None:
    """The option keys backend `name` reads (its module's OPTIONS), or None
    when it does not say (wrappers: they pass options on to children)."""
    entry = REGISTRY.get(resolve(name))
    found = getattr(_module(entry), "OPTIONS", None)
    return None if found is None else frozenset(found)


def parse_options(text: str) -> dict:
    """lc0's BackendOptions string (`key=value,...`, children in parentheses)
    as an option tree (see backends.options), every backend it names checked
    against the registry; BackendOptionsError (a ValueError) otherwise."""
    from lc0_rocm.backends import options
    tree = options.parse(text)
    options.check_backend_names(tree, names())
    return tree


def takes_children(name: str) -> bool:
    """Is `name` a wrapper whose options hold child sub-dictionaries?"""
    entry = REGISTRY.get(name)
    return entry is not None and bool(getattr(_module(entry), "TAKES_CHILDREN", False))


def takes_linear16(name: str) -> bool:
    """Does backend `name` take weights whose big layers are kept in
    LINEAR16 (the GPU backends decode them as they upload them; wrappers
    pass them to their children, each of which decides)?"""
    entry = REGISTRY.get(name)
    return entry is not None and (bool(getattr(_module(entry), "TAKES_LINEAR16", False)) or takes_children(name))


def create(name: str, weights, /, **options) -> Backend:
    """Build backend `name` (or `auto`) for loaded `weights` (None: no net,
    only for backends that need none, such as `random`). `options` are
    one level of lc0's backend-options tree (see backends.options): string
    values, and for wrappers sub-dictionaries (dict values) for children."""
    requested = name
    name = resolve(name)
    children = sorted(k for k, v in options.items() if isinstance(v, dict))
    if children and not takes_children(name):
        raise BackendError(f"backend {name} takes no child options ({', '.join(children)}); "
                           "children are for roundrobin, multiplexing and demux")
    if requested == "auto" and name == "cpu":
        print(f"lc0-rocm: {auto_fallback_note()}", file=sys.stderr)
    if weights is not None and not takes_linear16(name) and weights.keeps_linear16():
        weights = weights.decoded()
    return _module(REGISTRY[name]).create(name, weights, **options)


def prepare_in_background(name: str, options: dict) -> threading.Thread | None:
    """Start backend `name`'s preparation (its module's prepare(): for the
    GPU backends, the library and the GPU runtime) on a thread, so that it
    overlaps reading the weights; None when there is nothing to prepare.
    `auto` is resolved on the thread too (probing GPUs takes a moment).
    Errors stay on the thread: create() meets them again and raises them."""
    if any(isinstance(v, dict) for v in options.values()):
        return None                          # a wrapper's children prepare themselves in create()
    if name != "auto":
        entry = REGISTRY.get(name)
        try:
            if entry is None or getattr(_module(entry), "prepare", None) is None:
                return None
        except ImportError:                  # create() reports a backend that cannot load
            return None

    def run() -> None:
        try:
            entry = REGISTRY[resolve(name)]
            prepare = getattr(_module(entry), "prepare", None)
            if prepare is not None:
                prepare(entry.name, **options)
        except Exception:  # noqa: BLE001 - left for create() to raise
            pass
    thread = threading.Thread(target=run, name="lc0-rocm-backend-prepare", daemon=True)
    thread.start()
    return thread
