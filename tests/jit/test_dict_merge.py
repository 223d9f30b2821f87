"""Dict merges of the state: `st |= {"lr": lr, ...}` updates the state dict in place (its commit
is an `update`), and `st | {"g": g}` is a new dict of both dicts' items. Each test runs eager
and jit side by side and compares results and state after every call.
"""
import numpy as np

from .harness import check


def _calls(n):
    return [lambda s, i=i: (np.full(3, 0.1 * i), s) for i in range(n)]


def test_state_updated_by_a_merge():
    def make():
        state = {"w": np.ones(3), "lr": 0.1, "t": 0, "extra": {"a": 1.5}}

        def step(g, st):
            st["w"] = st["w"] - st["lr"] * g
            st |= {"lr": st["lr"] * 0.9, "t": st["t"] + 1, "last": g.sum()}
            st |= st["extra"]
            return st["w"] * st["a"], len(st)

        return step, state

    check(make, _calls(8), min_graph_calls=4)


def test_a_merged_copy_is_a_new_dict():
    def make():
        state = {"w": np.ones(3)}

        def step(g, st):
            d = st | {"g": g}
            d["w"] = d["w"] + g  # (a new dict: the state's "w" is not rebound)
            return d["g"] + d["w"], d is st, len(d)

        return step, state

    check(make, _calls(8), min_graph_calls=4)
