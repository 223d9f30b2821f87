"""`deque.popleft()` and `deque.appendleft(x)` on a deque in the state (sliding windows, frame
stacks, moving averages): the step works on a list shadow of the deque, taking its first item or
putting one first (a full bounded deque drops its last), and the commit does the same calls on
the deque itself.

Each test compares eager and jit side by side after every call (results, state, and which
objects are which) and checks that graphs ran.
"""
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .harness import check


def _calls(n):
    return [lambda s, i=i: (np.full(2, 0.1 * i), s) for i in range(n)]


def test_a_sliding_window_trimmed_in_a_loop():
    def make():
        state = {"q": deque(), "k": 3}

        def step(x, s):
            s["q"].append(x)
            while len(s["q"]) > s["k"]:
                s["q"].popleft()
            return np.mean(np.stack(list(s["q"])), axis=0)

        return step, state

    check(make, _calls(10))


def test_the_item_taken_is_the_deques_own_array():
    def make():
        items = [np.ones(2) * j for j in range(4)]
        state = {"q": deque(items), "keep": items}

        def step(x, s):
            old = s["q"].popleft()
            old += x  # (the array in `keep` too)
            s["q"].append(old)
            return old

        return step, state

    check(make, _calls(10))


@pytest.mark.parametrize("maxlen", [None, 3])
def test_appendleft(maxlen):
    def make():
        state = {"q": deque([np.zeros(2)] * 3, maxlen=maxlen), "n": deque([1.0, 2.0])}

        def step(x, s):
            s["q"].appendleft(x)
            s["n"].appendleft(float(x.sum()))
            v = s["n"].pop()
            return s["q"][0] + s["q"][-1] * v

        return step, state

    check(make, _calls(10))


def test_a_moving_average_of_python_numbers():
    def make():
        state = {"q": deque([0.0, 0.0, 0.0]), "s": 0.0}

        def step(x, s):
            v = float(x.sum())
            s["q"].append(v)
            s["s"] += v - s["q"].popleft()
            return s["s"] / len(s["q"])

        return step, state

    check(make, _calls(10))


def test_popleft_of_an_empty_deque_raises_eagers_error():
    def make():
        state = {"q": deque([np.zeros(2)] * 5)}

        def step(x, s):
            return x + s["q"].popleft()

        return step, state

    check(make, _calls(8))


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from(["append", "popleft", "appendleft", "pop", "read"]), min_size=1, max_size=6),
       st.sampled_from([None, 2, 4]))
def test_generated_sequences_of_end_writes(ops, maxlen):
    def make():
        state = {"q": deque([np.full(2, float(j)) for j in range(5)], maxlen=maxlen)}

        def step(x, s):
            out = x
            for op in ops:
                if op == "append":
                    s["q"].append(out * 2)
                elif op == "appendleft":
                    s["q"].appendleft(out + 1)
                elif op == "popleft":
                    out = out + s["q"].popleft()
                elif op == "pop":
                    out = out - s["q"].pop()
                else:
                    out = out * len(s["q"]) + s["q"][0]
            return out

        return step, state

    check(make, _calls(9), min_graph_calls=0)


def test_draining_a_deque_the_step_filled():
    """`while dq:` and `1 if dq else 0` read the deque as the step left it (it was its truth at
    the call's start: no trips, and two items left behind)."""
    def make():
        state = {"pending": deque(), "W": np.zeros(3), "q": deque([np.zeros(3)])}

        def step(g, s):
            s["pending"].append(g)
            s["pending"].append(g * 0.5)
            while s["pending"]:
                s["W"] -= 0.1 * s["pending"].popleft()
            s["q"].popleft()
            empty = 1 if s["q"] else 0
            s["q"].append(g)
            return s["W"].copy(), empty, not s["pending"]

        return step, state

    check(make, [lambda s, i=i: (np.ones(3) * i, s) for i in range(8)], min_graph_calls=4)
