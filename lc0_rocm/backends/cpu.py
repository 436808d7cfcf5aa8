"""The `cpu` backend: numpy float32 reference for every architecture.

The body-specific math lives in cpu_resnet.py (convolution bodies) and
cpu_attention.py (attention bodies); this module picks one from the net's
format and turns its outputs into the Backend contract.
"""
from __future__ import annotations

from lc0_rocm._proto import net_pb2
from lc0_rocm.backends.base import Backend, BackendError

NF = net_pb2.NetworkFormat


def is_available(name: str) -> tuple[bool, str]:
    return True, ""


def is_attention_body(weights) -> bool:
    return weights.format.network in (
        NF.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
        NF.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT,
    )


def create(name: str, weights, **options) -> Backend:
    if options:
        raise BackendError(f"cpu backend takes no options, got {sorted(options)}")
    if is_attention_body(weights):
        from lc0_rocm.backends.cpu_attention import AttentionModel as Model
    else:
        from lc0_rocm.backends.cpu_resnet import ResNetModel as Model
    return CpuBackend(Model(weights))


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, model):
        self.model = model

    def forward(self, planes):
        return self.model.forward(planes)
