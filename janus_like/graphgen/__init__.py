"""Graph generator: function AST + Profile -> IR graph with guards and assert nodes.

Input: a Python function, its call arguments, the profiler's observations and the set of
assumptions to relax. Output: a `GeneratedGraph` (IR, compiled input guards, commit plan).
Raises `Unsupported` (with a named reason and source line) for code it cannot convert.
"""
from .evaluator import GeneratedGraph, Generator  # noqa: F401
from .values import Unsupported  # noqa: F401
