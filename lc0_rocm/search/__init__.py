"""lc0 v0.32.1-style PUCT MCTS (classic search), one thread.

`core.Search` is the hot path over the flat-array `tree.Tree`; `params`
holds lc0's knobs; `evaluator` adapts a Network; `score` formats values.
Most callers want `lc0_rocm.engine.Engine`.
"""
from lc0_rocm.search.core import Limits, Search
from lc0_rocm.search.params import OPTIONS, OptionSpec, SearchParams
from lc0_rocm.search.tree import Tree

__all__ = ["Search", "Limits", "Tree", "SearchParams", "OPTIONS", "OptionSpec"]
