"""Python containers of the state changed between calls, side by side with eager: a replay
buffer's deque replaced by one of another `maxlen` (the graph kept trimming by the old bound),
and a defaultdict the step counts in that meets a new key (the graph's copy of the dict raised
KeyError, an internal error that kept the function eager)."""
import collections

import numpy as np
import pytest

from .harness import check, fallback_reasons


@pytest.mark.parametrize("new_bound", [5, 2, None])
@pytest.mark.parametrize("write", ["append", "setitem"])
def test_a_replay_buffer_given_another_bound(new_bound, write):
    """The state's deque replaced on call 5 by one of another `maxlen` (larger, smaller, none):
    the graph dropped the oldest items by the bound it was made with."""
    def step(x, st):
        if write == "append":
            st["buf"].append(x)
        else:
            st["buf"][0] = x
            st["buf"].append(x * 2)
            st["buf"].append(x * 3)
        st["w"] = st["w"] + x
        return len(st["buf"])

    def call(st, i):
        if i == 5:
            st["buf"] = collections.deque(st["buf"], maxlen=new_bound)  # (the same items)
        return np.full(2, 0.1 * i), st

    make = lambda: (step, {"w": np.ones(2), "buf": collections.deque([np.zeros(2)] * 2, maxlen=3)})  # noqa: E731
    check(make, [lambda st, i=i: call(st, i) for i in range(9)], min_graph_calls=3)


def test_a_new_key_of_a_defaultdict_the_step_counts_in():
    """`for t in tags: st["cnt"][t] += 1` of a defaultdict(int), a tag new on call 5: the graph
    looked the key up in its copy of the dict (a KeyError: an internal error that kept the
    function eager); eager's defaultdict inserts it."""
    def step(x, tags, st):
        for t in tags:
            st["cnt"][t] += 1
        return x * 2

    def call(st, i):
        return np.ones(2) * i, ["a", "b"] + (["c"] if i >= 5 else []), st

    jf = check(lambda: (step, {"cnt": collections.defaultdict(int)}), [lambda st, i=i: call(st, i) for i in range(9)],
               min_graph_calls=1)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
