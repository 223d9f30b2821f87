"""The standard library's `random` and `bisect` in a step: `random.random() < p` (teacher
forcing, augmentation coin flips), `rng.uniform(a, b)` on a `random.Random` the function reaches
through its inputs, and `bisect.bisect(milestones, epoch)` for a step-wise learning rate. Each
runs in the graph, draws the same numbers as eager in the same order, and a run that fails an
assumption after drawing puts the generator back (the harness compares the `random` module's
state after every call, as it does NumPy's).
"""
import bisect
import random

import numpy as np
import pytest

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons, random_array


def _model():
    r = np.random.default_rng(0)
    return {"w": jl.Variable(r.standard_normal((4, 3)) * 0.3), "step": 0, "milestones": [4, 9],
            "rng": random.Random(7)}


def _calls(n, flip=None):
    return [lambda s, i=i: (s["m"], random_array(i, (5, 4)) * (-1.0 if flip and i in flip else 1.0))
            for i in range(n)]


def test_module_random_draws_as_eager():
    def step(m, x):
        with jl.GradientTape() as tape:
            h = x @ m["w"]
            if random.random() < 0.5:  # a coin flip per call: a conditional node on the draw
                h = h * 0.5
            loss = F.mean(h * h) + random.uniform(0.0, 0.1) + random.gauss(0.0, 1.0)
        m["w"].assign_sub(0.1 * tape.gradient(loss, m["w"]))
        return loss

    jf = check(lambda: (step, {"m": _model()}), _calls(16), min_graph_calls=10)
    assert not fallback_reasons(jf), jf.explain()


def test_input_random_instance_restored_after_a_failed_assumption():
    """Draws from the model's own `random.Random`, then a branch speculated on the data fails
    (calls 9 and 13): the eager re-run must see the generator as it was before the graph ran."""
    def step(m, x):
        k = m["rng"].randint(0, 2)
        scale = m["rng"].random()
        if float(np.sum(x)) > 0:  # speculated: positive sums in warm-up
            y = x * scale + k
        else:
            y = x - scale
        m["step"] += 1
        return y @ m["w"]

    calls = [lambda s, i=i: (s["m"], (np.abs(random_array(i, (5, 4))) + 0.1) * (-1.0 if i in (9, 13) else 1.0))
             for i in range(16)]  # positive sums but in calls 9 and 13
    jf = check(lambda: (step, {"m": _model()}), calls, min_graph_calls=8)
    assert "assumption" in fallback_reasons(jf), jf.explain()


def test_a_new_random_instance_every_epoch_runs_one_graph():
    """The model's `random.Random` replaced every fourth call (a seed per epoch): its type is
    guarded, not its identity, and the graph draws from the instance the dict holds at the call
    (one graph); call 9's failed branch puts that instance back."""
    def step(m, x):
        k = m["rng"].randint(0, 2)
        if float(np.max(np.abs(x))) < 100.0:  # speculated: small inputs in warm-up
            x = x * m["rng"].random() + k
        return x @ m["w"]

    def call(s, i):
        if i % 4 == 0:
            s["m"]["rng"] = random.Random(i)
        return s["m"], random_array(i, (5, 4)) * (1000.0 if i == 9 else 1.0)

    jf = check(lambda: (step, {"m": _model()}), [lambda s, i=i: call(s, i) for i in range(20)], min_graph_calls=12)
    assert jf.stats()["graphs_generated"] == 1 and jf.stats()["assert_failures"] == 1, jf.explain()
    (g,) = jf.graphs()
    assert len(g.generator_slots) == 1 and not g.generators, (g.generator_slots, g.generators)


def test_shuffle_stays_eager_and_agrees():
    """`random.shuffle` permutes its argument in place: no draw node, the call runs eagerly."""
    def step(m, x):
        order = list(range(5))
        random.shuffle(order)
        return x[order] @ m["w"]

    jf = check(lambda: (step, {"m": _model()}), _calls(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0


@pytest.mark.parametrize("search", [bisect.bisect, bisect.bisect_left])
def test_bisect_milestones_of_a_counter(search):
    def step(m, x):
        lr = 0.1 * 0.5 ** search(m["milestones"], m["step"])
        with jl.GradientTape() as tape:
            loss = F.mean((x @ m["w"]) ** 2)
        m["w"].assign_sub(lr * tape.gradient(loss, m["w"]))
        m["step"] += 1
        return loss, lr

    jf = check(lambda: (step, {"m": _model()}), _calls(14), min_graph_calls=9)
    assert not fallback_reasons(jf) - {"assumption"}, jf.explain()


def test_bisect_of_changed_milestones_regenerates():
    """The milestones are guarded: a list changed between calls is not read from the old graph."""
    def step(m, x):
        m["step"] += 1
        return x * bisect.bisect(m["milestones"], m["step"])

    def call(s, i):
        if i == 8:
            s["m"]["milestones"][0] = 1
        return s["m"], random_array(i, (2,))

    check(lambda: (step, {"m": _model()}), [lambda s, i=i: call(s, i) for i in range(12)], min_graph_calls=6)


def test_choice_of_python_numbers_draws_as_eager():
    """`random.choice(rates)` of Python numbers (the module's hidden generator, the model's own
    `random.Random`, numbers the step computes): a draw node calling `choice` on the numbers, so
    the generator moves as eagerly; the pool changed between calls (call 10 appends, call 13
    changes an item) and a failed branch after the draws (call 11) keep the contract."""
    def step(m, x):
        lr = random.choice(m["rates"])
        k = m["rng"].choice((1, 2, 3))
        s = float(np.sum(x))
        v = random.choice([s, 2.0 * s, -s])
        if s > 0:  # speculated: positive sums in warm-up
            x = x * k
        m["w"].assign_sub(lr * 0.01 * (x.T @ x)[:, :3] * v)
        return v, k

    def call(s, i):
        if i == 10:
            s["m"]["rates"].append(0.5)
        if i == 13:
            s["m"]["rates"][0] = 0.25
        return s["m"], np.abs(random_array(i, (5, 4))) * (-1.0 if i == 11 else 1.0)

    def make():
        random.seed(3)
        return step, {"m": dict(_model(), rates=[0.1, 0.2])}

    jf = check(make, [lambda s, i=i: call(s, i) for i in range(16)], min_graph_calls=9)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def test_choice_of_arrays_stays_eager():
    """`random.choice` of arrays returns the caller's object: the step runs eagerly, named."""
    def step(m, x):
        return x @ random.choice(m["ws"])

    def make():
        random.seed(4)
        return step, {"m": {"ws": [np.ones((4, 2)), np.zeros((4, 2))]}}

    jf = check(make, _calls(6), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "random.choice()" in jf.explain()


def test_choice_of_numbers_of_two_types_stays_eager():
    """`random.choice([1, 0.5, 2])`: the draw's type is the item drawn (an int or a float), which
    the graph would take from one of them: the step runs eagerly, named."""
    def step(m, x):
        s = random.choice(m["pool"])
        return np.full(2, s), isinstance(s, int)

    jf = check(lambda: (step, {"m": {"pool": [1, 0.5, 2]}}), _calls(8), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "one type" in jf.explain(), jf.explain()
