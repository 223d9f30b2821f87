"""Functions an input object holds: `self.act = np.tanh`, `self.norm = functools.partial(np.clip,
a_min=-3, a_max=3)`, a partial over a user function and an array. They are called in the graph
through guarded members (the partial's `func`, `args`, `keywords`); rebinding the attribute, or
writing the partial's array in place between calls, must give eager's results. Side by side."""
import functools

import numpy as np

from .harness import check


def _clip_body(a, lo, hi):
    return np.clip(a, lo, hi) * 2.0


def scaled(a, w, gain=1.0):
    return np.tanh(a @ w) * gain


def weight_first(w, a, gain=1.0):
    return np.tanh(a @ w) * gain


class Holder:
    def __init__(self):
        self.w = np.random.default_rng(0).standard_normal((4, 4)) * 0.5
        self.act = np.tanh
        self.fn = np.clip
        self.norm = functools.partial(np.clip, a_min=-0.5, a_max=0.5)
        self.layer = functools.partial(scaled, w=self.w, gain=2.0)
        self.positional = functools.partial(weight_first, self.w)


def _calls(n, mutate=None):
    def call(state, k):
        if mutate is not None:
            mutate(state["h"], k)
        return np.random.default_rng(k).standard_normal((3, 4)), state["h"]

    return [lambda s, k=k: call(s, k) for k in range(n)]


def _make(body):
    def make():
        return body, {"h": Holder()}
    return make


def f(x, h):
    return h.norm(h.act(x) * 3.0), h.layer(x), h.positional(x, gain=0.5), h.fn(x, -0.5, 0.5)


def test_held_functions_and_partials_run_as_graphs():
    check(_make(f), _calls(8), min_graph_calls=4)


def test_rebinding_the_attributes_between_calls():
    def mutate(h, k):
        if k == 5:
            h.norm = functools.partial(np.clip, a_min=-0.1, a_max=0.1)
        if k == 6:
            h.act = np.sin
        if k == 7:
            h.layer = functools.partial(scaled, w=h.w, gain=-1.0)
        if k == 8:
            h.norm = functools.partial(_clip_body, lo=-0.2, hi=0.3)
        if k == 9:
            h.fn = np.where  # another function of the same type

    check(_make(f), _calls(11, mutate), min_graph_calls=4)


def test_a_partials_array_written_in_place():
    def mutate(h, k):
        if k >= 5:
            h.w *= 0.5  # the partials hold this array: its new contents, not the ones generated with

    check(_make(f), _calls(9, mutate), min_graph_calls=4)
