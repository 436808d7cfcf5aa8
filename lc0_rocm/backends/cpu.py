"""The `cpu` backend: numpy float32 reference for every architecture.

The body-specific math lives in cpu_resnet.py (convolution bodies) and
cpu_attention.py (attention bodies); this module picks one from the net's
format and turns its outputs into the Backend contract.
"""
from __future__ import annotations

from lc0_rocm._proto import net_pb2
from lc0_rocm.backends.base import Backend, BackendAttributes, BackendError

NF = net_pb2.NetworkFormat


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def is_attention_body(weights) -> bool:
    return weights.format.network in (
        NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
        NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT,
    )


# One search thread (numpy's matmuls take the cores) and lc0's eigen/blas
# minibatch of 7; larger batches run in chunks, so any size is taken.
ATTRIBUTES = BackendAttributes(runs_on_cpu=True, suggested_num_search_threads=1,
                               recommended_batch_size=7, maximum_batch_size=1024)

# Options each body accepts (values may arrive as strings from UCI's BackendOptions).
BODY_OPTIONS = {
    "resnet": {"algorithm": str},                       # winograd2 (default), winograd4, im2col
    "attention": {"policy_head": str, "value_head": str},
}
# Every key create() reads (the wrappers pass a child only these).
OPTIONS = frozenset({"threads"} | {k for body in BODY_OPTIONS.values() for k in body})


def create(name: str, weights, **options) -> Backend:
    threads = options.pop("threads", None)
    body = "attention" if is_attention_body(weights) else "resnet"
    allowed = BODY_OPTIONS[body]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        known = ", ".join(["threads"] + sorted(allowed))
        raise BackendError(f"cpu backend ({body} body): unknown option(s) {', '.join(unknown)}; known: {known}")
    from lc0_rocm.backends import blas_threads
    if threads is None:
        blas_threads.limit_by_default()   # one thread: spinning BLAS threads on busy cores cost 10-50x
    else:
        try:
            blas_threads.set_threads(int(threads))
        except ValueError:
            raise BackendError(f"cpu backend: threads must be a positive integer, got {threads!r}") from None
    kwargs = {k: allowed[k](v) for k, v in options.items()}
    if body == "attention":
        from lc0_rocm.backends.cpu_attention import AttentionModel as Model
    else:
        from lc0_rocm.backends.cpu_resnet import ResNetModel as Model
    return CpuBackend(Model(weights, **kwargs))


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, model):
        self.model = model

    def forward(self, planes):
        return self.model.forward(planes)

    def attributes(self) -> BackendAttributes:
        return ATTRIBUTES
