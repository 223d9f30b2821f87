"""Text made from graph values, side by side with eager. The graph makes such text after its
commit (`f"{loss:.3f}"` is a deferred string), so each case checks a way that could show: a
format spec the value's type rejects (eager raises there, before the step's later writes, and
also for text nothing reads), `repr()` and `isinstance` of the text, NumPy given the text,
`np.printoptions` in the step (NumPy's print options must not change for the whole process), and
a logging handler that keeps its records."""
import logging
import logging.handlers

import numpy as np
import pytest

from .harness import check


def _calls(n=8):
    return [lambda st, i=i: (np.full(3, 0.1 * i + 1e-7), st) for i in range(n)]


def _state():
    return {"W": np.ones((3, 2)) / 3, "k": 0, "log": []}


def _spec_after_writes(x, st):
    y = x @ st["W"]
    st["k"] += 1
    s = f"{y:.2f}"  # a 1-d array: TypeError here, with k written once
    st["k"] += 10
    return s


def _unread_bad_spec(x, st):
    y = x @ st["W"]
    st["k"] += 1
    _ = f"{y.sum():d}"  # a float with the int spec: ValueError, though nothing reads the text
    return y


def _percent_bad_directive(x, st):
    y = x @ st["W"]
    st["k"] += 1
    st["log"].append("%d items" % (y,))  # %d of an array: TypeError
    return y


@pytest.mark.parametrize("body", [_spec_after_writes, _unread_bad_spec, _percent_bad_directive])
def test_a_format_the_value_rejects_raises_where_eager_raises(body):
    jf = check(lambda: (body, _state()), _calls(), min_graph_calls=0)
    assert "formatting a graph value" in jf.explain(), jf.explain()


def _repr_of_text(x, st):
    s = f"{(x @ st['W']).sum():.3f}"
    st["log"].append(repr(s))
    st["log"].append(str([s, "b"]))


def _isinstance_of_text(x, st):
    s = f"{(x @ st['W']).sum():.3f}"
    st["log"].append(s if isinstance(s, str) and type(s) is str and hasattr(s, "upper") else "not a str")
    return s


def _numpy_of_text(x, st):
    st["log"].append(np.array([f"{v:.2f}" for v in x @ st["W"]]))


@pytest.mark.parametrize("body, graphs", [(_repr_of_text, 0), (_isinstance_of_text, 5), (_numpy_of_text, 0)])
def test_formatted_text_is_a_str_to_the_step(body, graphs):
    """`isinstance(s, str)` is true (the graph runs on); `repr(s)`, `str([s])` and
    `np.array([s])` need the text itself: eager."""
    check(lambda: (body, _state()), _calls(), min_graph_calls=graphs)


def test_print_options_set_in_the_step_are_not_left_set():
    def step(x, st):
        y = x @ st["W"]
        with np.printoptions(precision=2):
            st["t"] = str(y)
        st["u"] = str(y)
        return y

    before = np.get_printoptions()
    check(lambda: (step, _state()), _calls(), min_graph_calls=0)
    assert np.get_printoptions() == before


_FLUSH = {}


def test_a_memory_handler_sees_the_logged_arrays_themselves():
    """A MemoryHandler formats its records when flushed (here before each call): eager's record
    holds `st["b"]` itself, which the step then writes; a deferred call's copy would show the
    value before."""
    def make():
        out = []

        class Target(logging.Handler):
            def emit(self, record):
                out.append(record.getMessage())

        logger = logging.Logger("memory_handler_case")
        logger.setLevel(logging.INFO)
        buffered = logging.handlers.MemoryHandler(capacity=100, target=Target())
        logger.addHandler(buffered)
        _FLUSH[id(out)] = buffered.flush

        def step(x, st):
            y = x @ st["W"]
            logger.info("b=%s y=%s", st["b"], y)
            st["b"] += y
            return y

        return step, {"W": np.ones((3, 3)) / 3, "b": np.zeros(3), "out": out}

    def call(st, i):
        _FLUSH[id(st["out"])]()
        return np.full(3, 0.1 * i + 1e-7), st

    jf = check(make, [lambda st, i=i: call(st, i) for i in range(8)], min_graph_calls=0)
    assert "keep the record" in jf.explain(), jf.explain()
