"""The JAX side of the benchmark models (imported only when jax is installed)."""
from __future__ import annotations

import numpy as np

import jax


class JaxStepper:
    """One `jax.jit`-compiled SGD step per call (value_and_grad + tree_map update)."""

    system = "jax"

    def __init__(self, loss_fn, params, batches, lr, static_batch=False):
        """`static_batch`: pass batches as Python objects closed over (for models whose batch is
        a tree structure, which jax.jit retraces per distinct value), else as device arrays."""
        self.params = {k: jax.numpy.asarray(v) for k, v in params.items()}
        self.calls = 0
        if static_batch:
            self.batches = batches
            self._steps = {}

            def step_for(i):
                if i not in self._steps:
                    batch = batches[i]

                    def update(p):
                        loss, g = jax.value_and_grad(lambda q: loss_fn(q, *batch))(p)
                        return loss, jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)

                    self._steps[i] = jax.jit(update)
                return self._steps[i]

            self._call = lambda i: step_for(i)(self.params)
        else:
            self.batches = [tuple(jax.numpy.asarray(a) for a in batch) for batch in batches]

            @jax.jit
            def update(p, *batch):
                loss, g = jax.value_and_grad(loss_fn)(p, *batch)
                return loss, jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)

            self._call = lambda i: update(self.params, *self.batches[i])

    def __call__(self) -> float:
        i = self.calls % len(self.batches)
        self.calls += 1
        loss, self.params = self._call(i)
        return float(loss)

    def parameters(self) -> dict:
        return {k: np.asarray(v).copy() for k, v in self.params.items()}

    def stats(self):
        return None
