"""lc0's policy and value heads of a decoded net (its MultiHeadWeights):
single-head files keep the head in top-level fields, multi-head files
(BT3/BT4) in policy_heads / value_heads, where a policy head without its
own embedding uses the shared one."""
from __future__ import annotations

from lc0_rocm.weights.tree import Node

# Head names lc0 uses (its option values) -> our proto field names.
POLICY_HEAD_FIELDS = {"vanilla": "vanilla", "optimistic": "optimistic_st",
                      "soft": "soft", "opponent": "opponent"}
VALUE_HEAD_FIELDS = {"winner": "winner", "q": "q", "st": "st"}


def policy_head(net: Node, name: str) -> Node:
    """lc0's MultiHeadWeights policy head `name`, fields of PolicyHead, with
    `path` naming where its tensors live (for messages)."""
    heads = net.policy_heads
    if heads is None:
        # Single-head file: the vanilla head is in the top-level fields.
        return Node(path="weights", ip_pol_w=net.ip_pol_w, ip_pol_b=net.ip_pol_b,
                    ip2_pol_w=net.ip2_pol_w, ip2_pol_b=net.ip2_pol_b,
                    ip3_pol_w=net.ip3_pol_w, ip3_pol_b=net.ip3_pol_b,
                    ip4_pol_w=net.ip4_pol_w, pol_encoder=net.pol_encoder,
                    pol_headcount=net.pol_headcount, policy1=net.policy1, policy=net.policy)
    field = POLICY_HEAD_FIELDS[name]
    head = getattr(heads, field)
    shared_w = heads.ip_pol_w if heads.ip_pol_w is not None else net.ip_pol_w
    shared_b = heads.ip_pol_b if heads.ip_pol_b is not None else net.ip_pol_b
    fields = dict(head.__dict__)
    fields["path"] = f"weights.policy_heads.{field}"
    if fields["ip_pol_w"] is None:
        fields["ip_pol_w"] = shared_w
    if fields["ip_pol_b"] is None:
        fields["ip_pol_b"] = shared_b
    return Node(**fields)


def value_head(net: Node, name: str) -> Node:
    heads = net.value_heads
    if heads is None:
        return Node(path="weights", ip_val_w=net.ip_val_w, ip_val_b=net.ip_val_b,
                    ip1_val_w=net.ip1_val_w, ip1_val_b=net.ip1_val_b,
                    ip2_val_w=net.ip2_val_w, ip2_val_b=net.ip2_val_b,
                    ip_val_err_w=None, ip_val_err_b=None, ip_val_cat_w=None,
                    ip_val_cat_b=None, value=net.value)
    field = VALUE_HEAD_FIELDS[name]
    fields = dict(getattr(heads, field).__dict__)
    fields["path"] = f"weights.value_heads.{field}"
    return Node(**fields)


def policy_head_names(net: Node) -> list[str]:
    """Policy heads the net has, lc0's names, 'vanilla' first."""
    heads = net.policy_heads
    if heads is None:
        return ["vanilla"]
    return [name for name, field in POLICY_HEAD_FIELDS.items() if getattr(heads, field) is not None]


def value_head_names(net: Node) -> list[str]:
    """Value heads the net has, lc0's names, 'winner' first."""
    heads = net.value_heads
    if heads is None:
        return ["winner"]
    return [name for name, field in VALUE_HEAD_FIELDS.items() if getattr(heads, field) is not None]
