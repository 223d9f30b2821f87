"""The TreeLSTM of `tree_lstm.py` on trees that do not repeat: 3,000 random trees, as in a
treebank whose sentences all parse differently (the benchmark `tree_lstm` cycles through 8
shapes).

A graph is specialized to one tree shape, so here the jit makes graphs for the first 8 shapes,
sees that none is reused (`jit/function.py`, FREE_GRAPHS) and then generates one graph that stages
the recursive method `encode` as a recursion region, which walks each tree at run time
(`graphgen/recursion.py`). JAX would compile a program per tree; it is left out (no `jax_step`).
"""
from __future__ import annotations

from . import tree_lstm as _base
from .tree_rnn import one_off

FULL = dict(_base.FULL, n_trees=3000)
QUICK = dict(_base.QUICK, n_trees=200)

available = _base.available
numpy_step = _base.numpy_step
janus_step = _base.janus_step


def make(seed, quick=False):
    cfg = QUICK if quick else FULL
    return one_off(_base.make(seed, quick=quick), cfg, seed)
