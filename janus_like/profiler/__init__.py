"""Profiler: runs a function eagerly from an instrumented copy of its AST and records, per site,
what the graph generator will speculate on.

Input: a Python function and its call arguments. Output: a `Profile` — branch outcomes of each
`if`/`while`/`assert`, loop trip counts, the types/shapes/values read through attributes and
globals, and the callees of each call site. Callees that are user code are profiled too (they
are instrumented on first call), so recursion over trees is profiled at every level.
"""
from .instrument import instrumented  # noqa: F401
from .profile import Profile  # noqa: F401
