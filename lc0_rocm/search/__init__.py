"""lc0 v0.32.1's classic PUCT search.

`native` binds the native core's search (what the engine runs). The Python
search it is tested against: `core.Search` over the flat-array `tree.Tree`,
its phases mixed in from `picking`, `leaves`, `backup`, `stoppers` and
`selection`. `params` defines lc0's knobs for both; `evaluator` adapts a
Network; `score` formats values. Most callers want `lc0_rocm.engine.Engine`.
"""
from lc0_rocm.search.core import Limits, Search
from lc0_rocm.search.params import OPTIONS, OptionSpec, SearchParams
from lc0_rocm.search.tree import Tree

__all__ = ["Search", "Limits", "Tree", "SearchParams", "OPTIONS", "OptionSpec"]
