"""Branches generated once per outcome (`jit/variants.py`), and lists the function only appends
to (`graphgen/containers.py`), side by side with eager: a training step that logs every few
steps (a list append and a print under `if step % k == 0`), two such branches, a branch whose
outcomes return different Python types, an outcome whose graph cannot be generated, and a list
read after appends."""
import collections

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import janus_like as jl
from janus_like import F

from .harness import check, fallback_reasons


class Model:
    def __init__(self):
        self.w = np.zeros(3)
        self.t = 0
        self.history = []
        self.notes = []


def _calls(n):
    return [lambda s, k=k: (np.random.default_rng(k).standard_normal(3), s["m"]) for k in range(n)]


def _make(f):
    return lambda: (f, {"m": Model()})


def log_every_third(x, m):
    m.w = m.w - 0.1 * x
    m.t += 1
    if m.t % 3 == 0:
        m.history.append(float(m.w.sum()))
        print(f"step {m.t}: {m.history[-1]:.4f}")
    return m.w.sum()


def two_logs(x, m):
    m.w = m.w * 0.9 + x
    m.t += 1
    if m.t % 2 == 0:
        m.history.append(float(m.w[0]))
    if m.t % 3 == 0:
        print("t", m.t)
    return m.w


def typed_result(x, m):
    m.t += 1
    if m.t % 2 == 0:
        return "even"
    return m.t


def unsupported_outcome(x, m):
    m.t += 1
    if m.t % 4 == 2:
        m.notes.append(np.packbits(x > 0))  # no graph op: the calls taking this outcome run eagerly
    return x * m.t


class Stopper:
    def __init__(self):
        self.w = np.full(3, 2.0)
        self.best, self.best_w, self.bad = np.inf, None, 0


def early_stopping(x, s):
    s.w = s.w * 0.9 + 0.3 * x
    loss = float(np.sum(s.w ** 2))
    if loss < s.best:  # split: best_w is None before and a list after
        s.best, s.bad, s.best_w = loss, 0, [s.w.copy()]
    else:
        s.bad += 1  # a counter the other outcome resets: its value relaxes under the split
    return loss, s.bad > 2


def test_a_counter_under_a_split_branch_relaxes_as_without_the_split():
    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal(3), s["s"]) for k in range(60)]
    jf = check(lambda: (early_stopping, {"s": Stopper()}), calls, min_graph_calls=40)
    assert 2 <= len(jf.graphs()) <= 4, jf.explain()


def test_a_logging_branch_runs_as_one_graph_per_outcome():
    jf = check(_make(log_every_third), _calls(30), min_graph_calls=20)
    assert {frozenset(g.gen.forced.values()) for g in jf.graphs()} == {frozenset([True]), frozenset([False])}
    assert fallback_reasons(jf) <= {"assumption", "unsupported-syntax"}, jf.explain()
    assert "one graph per outcome there instead" in jf.explain()  # the report says what happened


def test_two_split_branches_get_a_graph_per_combination_seen():
    jf = check(_make(two_logs), _calls(40), min_graph_calls=25)
    assert 2 <= len(jf.graphs()) <= 4, jf.explain()


def test_outcomes_returning_different_python_types():
    check(_make(typed_result), _calls(20), min_graph_calls=12)


def and_or_value(x, m):
    # `a and b or c` whose value is a NumPy bool on one outcome and a float on the other: split
    return (x.sum() > 0) and 1.0 or 2.0


def test_an_and_or_value_of_two_types_is_split_into_a_graph_per_outcome():
    # the split asserted the outcome as a plain branch, whose failures never made the other graph
    jf = check(lambda: (and_or_value, None), [lambda s, k=k: (np.random.default_rng(k).standard_normal(3), None)
                                              for k in range(30)], min_graph_calls=20)
    assert len(jf.graphs()) == 2, jf.explain()


def test_an_outcome_without_a_graph_runs_eagerly_and_the_other_keeps_its_graph():
    jf = check(_make(unsupported_outcome), _calls(32), min_graph_calls=18)
    assert jf.stats()["eager_calls"] >= 6, jf.explain()  # the calls with t % 4 == 2


def only_appends(x, m):
    m.history.append(float(x.sum()))
    m.history.append(float(x.max()))
    return x * 2


def test_appending_to_an_input_list_guards_neither_its_length_nor_its_items():
    jf = check(_make(only_appends), _calls(12), min_graph_calls=9)
    assert jf.stats()["graphs_generated"] == 1, jf.explain()


def stack_after_append(x, m):
    m.history.append(jl.Tensor(x * 2))
    return F.stack(m.history).sum(0)


def read_after_append(x, m):
    m.history.append(float(x.sum()))
    total = 0.0
    for v in m.history:
        total = total + v
    return total + len(m.history) + m.history[-1]


def test_library_code_and_reads_see_the_appended_values():
    # F.stack was given the input list as it was before the appends (a wrong sum) until the
    # library call got the function's copy
    check(_make(stack_after_append), _calls(8), min_graph_calls=3)
    check(_make(read_after_append), _calls(8), min_graph_calls=3)


def mean_of_floats(x, m):
    a, b = float(x.sum()), float(x.max())
    return np.mean([a, b, 1.0]) * x, np.std((a, b))


def whole_mean(x, m):
    m.history.append(float(x.sum()))
    return np.mean(m.history)  # the whole list read back: a new length every call


def running_mean(x, m):
    m.history.append(float(x.sum()))
    return np.mean(m.history[-5:])  # a window: all of a short list, then the last five items


def test_numpy_functions_of_lists_of_graph_numbers():
    check(_make(mean_of_floats), _calls(8), min_graph_calls=4)


def test_a_log_read_back_whole_stops_generating_graphs():
    jf = check(_make(whole_mean), _calls(30), min_graph_calls=0)
    assert fallback_reasons(jf) == {"growing-container"}, jf.explain()
    assert jf.stats()["graphs_generated"] <= 6, jf.stats()


def test_a_window_of_a_log_after_an_append_grows_under_one_graph():
    """`history.append(loss)` then `history[-5:]`: while the list is short the window is all of
    it (its length guarded, then relaxed as it keeps changing); then the input's last four items
    (guarded only to exist) and the append. Before, the append made the whole list be read."""
    jf = check(_make(running_mean), _calls(30), min_graph_calls=20)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()
    main = max(jf.graphs(), key=lambda h: h.runs)
    assert main.runs >= 15, jf.explain()  # one graph for the long lists
    assert [a.expected for a in main.assumptions if a.kind == "length"] == [">= 4"], jf.explain()  # one guard

    def emptied(s, k):  # the caller empties the log on the first 10 calls: then it grows
        if k < 10:
            s["m"].history = []
        return np.random.default_rng(k).standard_normal(3), s["m"]

    check(_make(running_mean), [lambda s, k=k: emptied(s, k) for k in range(16)], min_graph_calls=4)


def diverging(x, m):
    """A divergence check on the step's own loss log: `len()` and items by negative index after
    the append (the input's last item is history[-2])."""
    m.w = m.w - x
    m.history.append(float(np.sum(m.w * m.w)))
    scale = 1.0
    if len(m.history) > 3 and m.history[-1] > 1.2 * m.history[-2]:
        scale = 0.5  # on a few calls: its assert fails and the call runs eagerly
    return m.w * scale + m.history[-2]


class Agent:
    def __init__(self):
        self.buffer = collections.deque(maxlen=4)  # a replay buffer: the oldest goes
        self.w = np.ones(3)


def remember(x, m):
    m.w = m.w * 0.5 + x
    m.buffer.append(float(m.w.sum()))
    return m.w


def remember_and_count(x, m):
    m.buffer.append(float(x.sum()))
    return len(m.buffer)  # read back: 1, 2, 3 then 4 (the deque's maxlen drops the oldest)


def smoothed(x, m):
    m.buffer.append(float(x.sum()))
    return sum(m.buffer) / 4.0  # read back whole after the append: the last four


def buffer_mean(x, m):
    return x * sum(m.buffer)  # a deque the function does not append to: its items, guarded


def window_mean(x, m):
    """An RL script's score window: NumPy's mean of a bounded deque the step appends to, and
    its newest item by index."""
    m.w = m.w * 0.9 + x
    m.buffer.append(float(m.w @ x))
    return np.mean(m.buffer) - m.buffer[-1]


def window_extend_pop(x, m):
    m.buffer.extend([float(x[0]), float(x[1])])  # two at once: the oldest two may go
    last = m.buffer.pop()
    return x * (last + np.max(m.buffer))


def window_appendleft(x, m):
    m.buffer.appendleft(float(x.sum()))  # a bounded deque drops from the right
    return np.mean(m.buffer)


def test_reading_a_deque_whole():
    """`sum()` of an input deque: its items read like a list's, also after an append (it was
    a generator error: TypeError on the deque's reference, then an unmodelled maxlen)."""
    def make(f):
        return lambda: (f, {"m": Agent()})

    def call(s, k):
        s["m"].buffer.append(float(k % 3))
        return np.random.default_rng(k).standard_normal(3), s["m"]

    check(make(buffer_mean), [lambda s, k=k: call(s, k) for k in range(12)], min_graph_calls=1)
    jf = check(make(smoothed), _calls(12), min_graph_calls=8)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


@pytest.mark.parametrize("f, graph_calls", [(remember_and_count, 10), (window_mean, 10), (window_extend_pop, 10)])
def test_reading_a_bounded_deque_after_appending(f, graph_calls):
    """The items a bounded deque keeps after the step's appends: the graph's copy drops the
    oldest as the deque does; the commit appends to the deque itself."""
    jf = check(lambda: (f, {"m": Agent()}), _calls(14), min_graph_calls=graph_calls)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_a_long_bounded_deque_runs_as_graphs_once_full():
    """A window of ten: each length until it is full would need its own graph (the signature
    goes eager as a growing log), and once full its length stays: graphs again from then on."""
    class Scores:
        def __init__(self):
            self.buffer = collections.deque(maxlen=10)
            self.w = np.ones(3)

    jf = check(lambda: (window_mean, {"m": Scores()}), _calls(40), min_graph_calls=24)
    assert jf.stats()["eager_calls"] <= 12, jf.explain()


def test_a_deques_left_end():
    """A full bounded deque's appendleft drops its last item (test_deque_ends.py has more)."""
    check(lambda: (window_appendleft, {"m": Agent()}), _calls(10), min_graph_calls=3)


def test_appending_to_an_input_deque():
    def make(f):
        return lambda: (f, {"m": Agent()})

    jf = check(make(remember), _calls(12), min_graph_calls=8)
    assert jf.stats()["graphs_generated"] == 1, jf.explain()


def bounded_log(x, m):
    m.w = m.w - 0.1 * x
    if len(m.history) < 12:  # the length only: after a few new lengths, a graph input
        m.history.append(float(m.w.sum()))
    return m.w.sum() * (len(m.history) + 1)


def cycling_lengths(x, m):  # lists of a few lengths coming back: one graph per length, reused
    total = 0.0
    for i in range(len(m.notes)):
        total = total + m.notes[i] * x
    return total


def test_a_list_only_len_reads_grows_under_one_graph():
    """`if len(history) < 12: history.append(...)`: the length changes every call, so after
    GROWING_AFTER new lengths it is read when the graph runs; the branch flips at 12."""
    jf = check(_make(bounded_log), _calls(24), min_graph_calls=14)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()
    assert jf.stats()["regenerations"] >= 1, jf.explain()


def test_lengths_that_come_back_keep_one_graph_each():
    def call(s, k):
        s["m"].notes = [float(j) for j in range(2 + k % 3)]
        return np.random.default_rng(k).standard_normal(3), s["m"]

    jf = check(_make(cycling_lengths), [lambda s, k=k: call(s, k) for k in range(15)], min_graph_calls=9)
    assert len(jf.graphs()) == 3 and not jf.fallbacks(), jf.explain()


class Counter:
    def __init__(self):
        self.w = np.random.default_rng(0).standard_normal((3, 3)) * 0.5
        self.n = 0


def over_steps(xs, c):
    h = np.zeros(3)
    for x in xs:
        h = np.tanh(x + h @ c.w)
    c.n += 1  # a counter: its value assumption fails, is relaxed, and the graphs go
    return h * c.n


def test_sequences_of_a_few_lengths_with_a_counter_are_not_a_growing_log():
    """Lengths 3, 4, 5 cycling while a counter's relaxation drops the first graphs: no graph ran
    twice after 5 length failures, but a length came back, so one graph per length is made."""
    r = np.random.default_rng(3)
    seqs = [[r.standard_normal(3) for _ in range(3 + k % 3)] for k in range(6)]
    jf = check(lambda: (over_steps, {"c": Counter()}), [lambda s, k=k: (seqs[k % 6], s["c"]) for k in range(30)],
               min_graph_calls=20)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()


def plateau(x, m):
    """Plateau detection on a loss history the caller appends to: its last items by negative
    index and its length."""
    m.w = m.w - 0.1 * x
    loss = float(np.sum(m.w * m.w))
    lr = 0.1
    if len(m.history) >= 3 and loss > min(m.history[-3:]):
        lr = 0.05
    return m.w * lr + m.history[-1]


def test_the_last_items_of_a_growing_list_by_negative_index():
    """After its length is relaxed (a new one every call), `history[-3:]` and `history[-1]` read
    the last items, guarded only to exist: the graphs keep running while the list grows."""
    def call(s, k):
        s["m"].history.append(1.0 + 0.25 * (k % 4))
        return np.random.default_rng(k).standard_normal(3) * 0.1, s["m"]

    jf = check(_make(plateau), [lambda s, k=k: call(s, k) for k in range(30)], min_graph_calls=10)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()


class Metrics:
    def __init__(self):
        self.t = 0
        self.by_key = {}


def keyed_by_counter(x, m):
    m.t += 1  # a counter: after its value keeps changing, a graph input
    m.by_key[f"act_{m.t % 2}"] = float(np.abs(x).mean())  # which entry: known only at run time
    return x * 2.0


def test_a_dict_key_formatted_from_a_graph_value_is_not_stored_as_a_string_to_be():
    """The key was stored as the generator's deferred string object (state differed from
    eager's from the first graph run); such a write now keeps the signature eager."""
    jf = check(lambda: (keyed_by_counter, {"m": Metrics()}),
               [lambda s, k=k: (np.random.default_rng(k).standard_normal(3), s["m"]) for k in range(12)],
               min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()


def test_a_divergence_check_on_the_steps_own_loss_log_grows_under_one_graph():
    """The function appends its loss, then compares it with the previous one: the length is
    relaxed after a few new lengths, the previous loss is an input read by negative index, and
    the branch's rare outcome fails its assert and runs eagerly (or in its own graph)."""
    def call(s, k):  # the loss shrinks, except on call 25: the branch's other outcome
        w = s["m"].w
        return (-3.0 * w if k == 25 else 0.05 * w * (1.0 + 0.1 * np.random.default_rng(k).random(3))), s["m"]

    def make():
        m = Model()
        m.w, m.history = np.ones(3), [10.0]
        return diverging, {"m": m}

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(40)], min_graph_calls=25)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()


def _log_reader(appends, window, back, with_len):
    def step(x, m):
        for i in range(appends):
            m.history.append(float(x.sum()) + i)
        out = np.mean(m.history[-window:]) * x
        if with_len:  # a conditional on the length: a conditional node once the length is read at run time
            out = out + len(m.history) + (m.history[-window] if len(m.history) >= window else -1.0)
        if back:
            out = out + m.history[-back]
        return out
    return step


@settings(max_examples=25, deadline=None)
@example(appends=1, window=5, back=0, with_len=False, resets={3}, seed=0)  # the graph made on an empty log
@given(appends=st.integers(1, 2), window=st.integers(1, 6), back=st.integers(0, 4),
       with_len=st.booleans(), resets=st.sets(st.integers(0, 17), max_size=6), seed=st.integers(0, 1000))
def test_generated_reads_of_a_log_after_appends_match_eager(appends, window, back, with_len, resets, seed):
    """Appends, then a window of the last items, an item by negative index and the length, on a
    log the caller sometimes resets to a few items (lengths that shrink, come back and grow):
    eager and jit side by side after every call, whichever graphs and guards the lengths get."""
    def call(s, k):
        if k in resets:
            s["m"].history = [float(j) for j in range(back)]  # history[-back] stays readable (empty: back 0)
        return np.random.default_rng(seed + k).standard_normal(3), s["m"]

    def make():
        m = Model()
        m.history = [0.5] * back
        return _log_reader(appends, window, back, with_len), {"m": m}

    check(make, [lambda s, k=k: call(s, k) for k in range(18)], min_graph_calls=0)


def previous_or_zero(x, m):
    m.w = m.w - x
    m.history.append(float(np.sum(m.w * m.w)))
    return m.w + (m.history[-2] if len(m.history) > 1 else 0.0)


def test_a_conditional_on_a_growing_logs_length_grows_under_one_graph():
    """Once the length is read when the graph runs, `history[-2] if len(history) > 1 else 0.0`
    is a conditional node; its branches read the log's last items and the append (before, the
    node read the list whole: a new graph per length, then eager)."""
    def make():
        m = Model()
        m.w = np.ones(3)
        return previous_or_zero, {"m": m}

    jf = check(make, [lambda s: (0.05 * s["m"].w, s["m"])] * 40, min_graph_calls=30)
    assert "growing-container" not in fallback_reasons(jf), jf.explain()


def long_window(x, m):
    m.history.append(float(x.sum()))
    return np.mean(m.history[-12:]) * x  # longer than the log for its first calls


def test_a_window_longer_than_the_log_is_retried_once_the_log_is_long_enough():
    """While the log is shorter than the window every length is a new graph: the signature goes
    eager (`growing-container`) with the length relaxed. After REGROW_AFTER eager calls one graph
    is generated again; the log is then longer than the window, so the graph reads its last
    items and serves every later length."""
    jf = check(_make(long_window), _calls(90), min_graph_calls=30)
    main = max(jf.graphs(), key=lambda h: h.runs)
    assert main.runs >= 30, jf.explain()


def length_and_sum(x, m):
    m.history.append(float(x.sum()))
    return x * len(m.history) + sum(m.history)  # the length relaxed, and the whole log read back


def test_a_log_read_back_whole_is_retried_rarely():
    """A log whose length was relaxed but which is also read whole stays a new graph per
    length: each retry (after 32, then 64, then 128 eager calls) generates one graph, and the
    next new length sends the signature eager again."""
    jf = check(_make(length_and_sum), _calls(260), min_graph_calls=0)
    stats = jf.stats()
    assert fallback_reasons(jf) == {"growing-container"}, jf.explain()
    assert 1 + 3 <= stats["regenerations"] and stats["graphs_generated"] <= 7 + 3, jf.explain()
    assert stats["eager_calls"] >= 230, stats
