"""Warnings off (or made errors) around the JIT's own sample computations, leaving the user's
warning state as it was.

`warnings.catch_warnings()` marks the filters changed on entry and exit, and every module's
registry of warnings already shown is then emptied: a warning the user's code had shown once
under the `"default"` action showed again after each graph generation, where eager shows it once.
These put one filter in front of the list for the duration instead, which the interpreter reads
at each warning without a mark; NumPy's floating-point warnings are switched by `np.errstate`.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np


@contextlib.contextmanager
def _first_filter(action: str, numpy_errors: str):
    entry = (action, None, Warning, None, 0)
    with np.errstate(all=numpy_errors):
        warnings.filters.insert(0, entry)
        try:
            yield
        finally:
            for k, f in enumerate(warnings.filters):  # (ours, unless a filter was put before it)
                if f is entry:
                    del warnings.filters[k]
                    break


def quiet():
    """No warning shows, and NumPy's floating-point errors pass (sample evaluations)."""
    return _first_filter("ignore", "ignore")


def strict():
    """Every warning raises, and NumPy's floating-point errors too (constant folding: what would
    warn or raise at run time stays at run time)."""
    return _first_filter("error", "raise")
