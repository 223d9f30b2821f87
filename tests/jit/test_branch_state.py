"""State written inside a branch on a graph value (a conditional node): attributes of input
objects, globals and closure cells, and locals holding Python numbers that differ between the
branches. Eager and jit side by side after every call; the branch outcome changes mid-sequence.

Each written piece of state is an output of the conditional node (the branch that did not write
it passes the old value through), committed with the rest of the call's state."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from .harness import LiveCells, LiveGlobals, check, fallback_reasons, load_module


def _has_cond(jf):
    return any(n.op == "cond" for g in jf.compiled for n in g.graph.all_nodes())


class _Tracker:
    def __init__(self):
        self.best = float("inf")
        self.bad_steps = 0
        self.best_w = np.zeros(3)


class _Obj:
    """Attributes set per test."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def _early_stopping():
    def f(tracker, w, x):
        loss = float(((x - w) ** 2).sum())
        if loss < tracker.best:
            tracker.best = loss
            tracker.bad_steps = 0
            tracker.best_w = w * 1.0
        else:
            tracker.bad_steps += 1
        return loss, tracker.bad_steps

    return f, {"t": _Tracker(), "w": np.zeros(3)}


def _calls(scales):
    """Loss goes down, up, down...: each call's loss is about `scale`."""
    return [lambda s, k=k, i=i: (s["t"], s["w"], np.full(3, k) + 0.001 * i) for i, k in enumerate(scales)]


def test_attribute_writes_in_both_branches_early_stopping():
    scales = [3.0, 2.0, 2.5, 1.0, 1.5, 1.7, 0.5, 0.9, 0.2, 0.3, 0.1, 0.4]
    jf = check(_early_stopping, _calls(scales), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(0.0, 4.0, allow_nan=False), min_size=4, max_size=12))
def test_attribute_writes_random_loss_sequences(scales):
    check(_early_stopping, _calls(scales), min_graph_calls=0)


def test_nonlocal_counter_in_branch():
    def make():
        hits = 0

        def f(x):
            nonlocal hits
            if x.sum() > 0:
                hits = hits + 1
            return x * 2.0, hits

        return f, LiveCells(f, ["hits"])

    signs = [1, -1, 1, 1, -1, -1, 1, -1, 1, 1]
    jf = check(make, [lambda s, sg=sg, i=i: (np.full(3, 0.5 + i) * sg,) for i, sg in enumerate(signs)],
               min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


_GLOBALS_SRC = """
import numpy as np

CLIPPED = 0
LAST_NORM = 0.0


def clip(g):
    global CLIPPED, LAST_NORM
    norm = np.sqrt((g * g).sum())
    if norm > 1.0:
        CLIPPED = CLIPPED + 1
        LAST_NORM = float(norm)
        g = g / norm
    return g
"""


def test_global_writes_in_one_branch(tmp_path):
    def make():
        mod = load_module(tmp_path, _GLOBALS_SRC, "clip_prog")
        return mod.clip, {"globals": LiveGlobals(mod, ["CLIPPED", "LAST_NORM"])}

    scales = [2.0, 0.1, 3.0, 0.2, 0.3, 5.0, 0.1, 2.0, 4.0, 0.2]
    jf = check(make, [lambda s, k=k, i=i: (np.full(4, k) + 0.01 * i,) for i, k in enumerate(scales)],
               min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_nested_branches_write_state():
    def make():
        def f(obj, x):
            s = x.sum()
            if s > 0:
                if s > 10:
                    obj.level = 2
                else:
                    obj.level = 1
                obj.total = obj.total + s
            else:
                obj.level = 0
            return obj.level * x

        return f, {"o": _Obj(level=0, total=np.float64(0.0))}

    vals = [1.0, 20.0, -1.0, 5.0, 30.0, -2.0, 2.0, -3.0, 40.0, 1.0, -1.0]
    jf = check(make, [lambda s, v=v: (s["o"], np.full(2, v / 2)) for v in vals], min_graph_calls=3)
    assert _has_cond(jf), jf.explain()


@pytest.mark.parametrize("then_value", ["1", "float(x.sum())"])
def test_python_values_of_different_types_fall_back(tmp_path, then_value):
    """An int in one branch and a float in the other (a constant or a graph number): eager
    gives either type, a graph value has one, so the signature stays eager (named), results
    equal."""
    else_value = "0.5" if then_value == "1" else "0"
    source = f"""
def f(obj, x):
    if x.sum() > 0:
        obj.mark = {then_value}
    else:
        obj.mark = {else_value}
    return x * obj.mark
"""

    def make():
        return load_module(tmp_path, source, "mixed_types").f, {"o": _Obj(mark=0)}

    signs = [1, -1, 1, -1, 1, -1, 1, 1]
    jf = check(make, [lambda s, sg=sg: (s["o"], np.full(2, sg * 1.0)) for sg in signs], min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
    assert "differs in type" in jf.explain(), jf.explain()


def test_state_write_in_loop_on_graph_value_falls_back():
    def make():
        def f(obj, x):
            while x.sum() < 10.0:
                x = x * 2.0
                obj.steps = obj.steps + 1
            return x

        return f, {"o": _Obj(steps=0)}

    starts = [1.0, 0.1, 2.0, 0.01, 3.0, 0.5, 1.0, 0.2]
    jf = check(make, [lambda s, v=v: (s["o"], np.full(2, v)) for v in starts], min_graph_calls=0)
    assert jf.stats()["calls"] == len(starts)


def test_branch_writes_attribute_set_in_one_branch_only():
    """A new attribute in one branch: no value to pass through in the other, so eager runs."""
    def make():
        def f(obj, x):
            if x.sum() > 0:
                obj.seen_positive = True
            return x + 1.0

        return f, {"o": _Obj()}

    signs = [1, -1, -1, 1, -1, 1, -1, 1]
    check(make, [lambda s, sg=sg: (s["o"], np.full(2, sg * 1.0)) for sg in signs], min_graph_calls=0)


def test_temporary_of_one_branch_is_not_a_merge():
    """A name only one branch binds (unbound before): a graph, as long as nothing reads it
    after the conditional (gradient clipping written the usual way)."""
    def make():
        def f(g):
            norm = np.sqrt((g * g).sum())
            if norm > 1.0:
                scale = 1.0 / norm
                g = g * scale
            return g

        return f, {}

    scales = [2.0, 0.1, 3.0, 0.2, 0.3, 5.0, 0.1, 2.0, 4.0, 0.2]
    jf = check(make, [lambda s, k=k, i=i: (np.full(4, k) + 0.01 * i,) for i, k in enumerate(scales)],
               min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_temporary_of_one_branch_read_after_falls_back():
    """Read after the conditional (here where the data makes it bound), the signature stays
    eager with the reason named."""
    def make():
        def f(x):
            if x.sum() > 0:
                tmp = x * 2.0
            else:
                x = x - 1.0
            if x.sum() > 0:
                x = x + tmp
            return x

        return f, {}

    signs = [1, -1, 1, -1, 1, 1, -1, 1]
    jf = check(make, [lambda s, sg=sg: (np.full(2, sg * 1.0),) for sg in signs], min_graph_calls=0)
    assert "bound in only one branch" in jf.explain(), jf.explain()


def test_attribute_aliasing_an_array_written_in_place_after_the_branch():
    """`obj.best = w` in one branch makes the attribute the same array as `w`; eager's later
    `w += 1` changes both. The merged attribute cannot alias `w` in a graph, so the in-place
    write makes it unreadable and the signature stays eager (before, the graph committed the
    value from before the write)."""
    def make():
        def f(obj, x):
            w = x * 1.0
            if w.sum() > 0:
                obj.best = w
            else:
                obj.best = obj.best * 0.5
            w += 1.0
            return w.sum()

        return f, {"o": _Obj(best=np.zeros(2))}

    signs = [1, -1, 2, -2, 3, -3, 1, -1]
    check(make, [lambda s, v=v: (s["o"], np.full(2, v * 1.0)) for v in signs], min_graph_calls=0)


def test_temporary_deleted_in_its_branch():
    def make():
        def f(x):
            if x.sum() > 0:
                tmp = x * 2.0
                x = x + tmp
                del tmp
            else:
                x = x - 1.0
            return x

        return f, {}

    signs = [1, -1, 2, -2, 3, -3, 1, -1]
    jf = check(make, [lambda s, sg=sg: (np.full(2, sg * 1.0),) for sg in signs], min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


class _Batch:
    weight = 1.0  # a class default the step may shadow on the batch object

    def __init__(self, x):
        self.x = x


def _reweight(st, b):
    loss = (b.x * st["w"]).sum()
    if loss > 0:
        b.weight = 0.5
        b.flag = True
    st["w"] -= 0.1 * b.weight * b.x
    return b.weight, hasattr(b, "flag")


def test_an_attribute_set_in_one_branch_on_an_object_without_one_stays_unset_on_the_other():
    """A new object each call whose attribute one branch sets: the other branch must leave it
    unset (the class's default was written onto the object; without a default, an internal
    error)."""
    calls = [lambda s, i=i: (s, _Batch(np.random.default_rng(i).standard_normal(3))) for i in range(10)]
    jf = check(lambda: (_reweight, {"w": np.ones(3)}), calls, min_graph_calls=2)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def _clip_step(st, x):
    g = x * st["w"]
    if g.sum() > 0:  # both outcomes in the warm-up: a conditional node
        st["w"] -= 0.1 * g
        st["m"][0] *= 0.5
    else:
        st["w"] += 0.05 * g
    return st["w"].sum()


def test_a_state_array_augmented_in_a_branch_is_an_in_place_write():
    """`st["w"] -= g` inside a data-dependent branch: the array is written in place, and the dict
    keeps the same object, so no container write is needed (it kept one graph per outcome)."""
    calls = [lambda s, i=i: (s, np.random.default_rng(i).standard_normal(3)) for i in range(12)]
    jf = check(lambda: (_clip_step, {"w": np.ones(3), "m": [np.ones(2)]}), calls, min_graph_calls=6)
    assert "unsupported-syntax" not in fallback_reasons(jf), jf.explain()
