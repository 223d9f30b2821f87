"""`for` loops over the user's generator functions (`graphgen/generators.py`), side by side with
eager after every call: a minibatch generator in an epoch step, a generator that reads what the
loop's body writes (the two interleave as in Python), enumerate, break and return in the loop's
body (the generator is left where it stands, its `finally` runs; a handler or `__exit__` that
would see the GeneratorExit keeps the loop eager), `yield from` a generator, a
recursive traversal of a tree and a list, a generator's return value, for-else, a generator
defined in the function; and the forms that stay eager (a yield under a branch on a graph value,
a generator consumed by next()) give eager's results. `list`, `sum`, `sorted`, `max` of a
generator run it to its end first, as Python does."""
import numpy as np
from hypothesis import given, settings, strategies as st

from .harness import check, fallback_reasons, random_array


class Model:
    def __init__(self):
        self.w = random_array(0, (4, 2)) * 0.5
        self.log = []
        self.t = 0


def batches(x, y, bs):
    for i in range(0, len(x), bs):
        yield x[i:i + bs], y[i:i + bs]


def epoch(m, x, y):
    total = 0.0
    for xb, yb in batches(x, y, 4):
        err = np.tanh(xb @ m.w) - yb
        m.w = m.w - 0.1 * xb.T @ err / len(xb)
        total += float(np.mean(err ** 2))
    return total


def _calls(n, rows=12):
    return [lambda s, k=k: (s["m"], random_array(k, (rows, 4)), random_array(k + 100, (rows, 2))) for k in range(n)]


def _make(f):
    return lambda: (f, {"m": Model()})


def test_an_epoch_over_a_minibatch_generator_is_one_graph():
    jf = check(_make(epoch), _calls(10), min_graph_calls=6)
    assert fallback_reasons(jf) == set(), jf.explain()


def scaled_weights(m, n):
    for i in range(n):
        yield m.w * (i + 1)  # reads m.w after the loop's body wrote it


def interleaved(m, x, y):
    out = []
    for k, v in enumerate(scaled_weights(m, 3), 1):
        m.w = m.w + 0.01 * k * (x[:2, :4].T @ v[:2])  # each item sees the write before it
        out.append(float(v.sum()))
    return out, m.w


def test_the_generator_and_the_loop_body_interleave_as_in_python():
    check(_make(interleaved), _calls(8), min_graph_calls=4)


def numbered(m, x, y):
    avg = 0.0
    for n, v in enumerate(scaled_weights(m, 3), start=1):  # (a keyword start kept it eager)
        avg += (float(v.sum()) - avg) / n
    return avg, x @ m.w


def test_a_generator_numbered_from_a_keyword_start():
    jf = check(_make(numbered), _calls(8), min_graph_calls=4)
    assert fallback_reasons(jf) == set(), jf.explain()


def logged(m, x, log):
    for i in range(len(x)):
        log.append(("before", i))
        try:
            yield x[i]
        finally:
            log.append(("after", i))  # on a break: when the loop leaves the generator
    log.append(("done", len(x)))


def leaves_early(m, x, y):
    total = np.zeros(4)
    for row in logged(m, x, m.log):
        total = total + row
        if len(m.log) >= 7:  # a break on a Python value
            break
    else:
        m.log.append(("no break", 0))
    m.log.append(("end", float(total.sum())))
    return total


def test_break_leaves_the_generator_where_it_stands():
    check(_make(leaves_early), _calls(6, rows=3) + _calls(6, rows=5), min_graph_calls=6)


def returns_from_inside(m, x, y):
    for i, row in enumerate(logged(m, x, m.log)):
        if i == 2:
            return row * 2.0, len(m.log)  # out of the function, through the generator
    return None


def test_return_in_the_loop_body_leaves_the_function():
    check(_make(returns_from_inside), _calls(6, rows=3) + _calls(4, rows=2), min_graph_calls=6)


class Tree:
    def __init__(self, value, children=()):
        self.value, self.children = value, list(children)


def postorder(t):
    for c in t.children:
        yield from postorder(c)
    yield t


def chained(t, extra):
    n = yield from counted(t)  # its return value
    yield from extra  # a list's items
    yield np.float64(n)


def counted(t):
    k = 0
    for node in postorder(t):
        k += 1
        yield node.value
    return k


def tree_sum(m, tree, extra):
    acc = np.zeros(2)
    for v in chained(tree, extra):
        acc = np.tanh(acc + v @ m.w[:2]) if v.ndim else acc + v
    return acc


def _tree(k):
    r = np.random.default_rng(k)
    leaf = lambda: Tree(r.standard_normal(2))
    return Tree(r.standard_normal(2), [Tree(r.standard_normal(2), [leaf(), leaf()]), leaf()])


def test_yield_from_a_recursive_traversal_and_a_list():
    calls = [lambda s, k=k: (s["m"], _tree(k), [np.float64(k), np.float64(1.5)]) for k in range(12)]
    jf = check(_make(tree_sum), calls, min_graph_calls=6)
    # the NumPy number that changes every call becomes a graph input (it was a graph per value)
    assert fallback_reasons(jf) <= {"assumption"} and jf.stats()["graphs_generated"] <= 3, jf.explain()


def local_generator(m, x, y):
    scale = float(y.mean())

    def rows(a):
        for r in a:
            yield r * scale  # a closure over the function's local

    return sum(float(r @ m.w[:, 0]) for r in x[:2]) + sum(float(v.sum()) for v in [x[0]]) + \
        [v for v in [0.0]][0] + _rows_total(rows, x)


def _rows_total(gen, x):
    t = 0.0
    for v in gen(x[:3]):
        t += float(v.sum())
    return t


def test_a_generator_defined_in_the_function():
    check(_make(local_generator), _calls(8), min_graph_calls=4)


def under_a_branch(x):
    for r in x:
        if r.sum() > 0:  # a graph value: the yield would sit in a conditional node
            yield r


def yields_under_a_branch(m, x, y):
    total = np.zeros(4)
    for r in under_a_branch(x):
        total = total + r
        m.log.append(float(r[0]))
    return total


def consumed_by_next(m, x, y):
    return next(batches(x, y, 5))[0].sum()


def test_forms_that_stay_eager_give_eagers_results():
    for f in (yields_under_a_branch, consumed_by_next):
        jf = check(_make(f), _calls(8), min_graph_calls=0)
        assert "generator" in fallback_reasons(jf), jf.explain()


def closing_rows(m, x):
    for i in range(len(x)):
        try:
            yield x[i]
        except GeneratorExit:  # the loop's break closes the generator here
            m.log.append(("closed", i))
            raise


class Section:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        self.log.append("ok" if kind is None else kind.__name__)  # GeneratorExit when closed
        return False


def rows_in_a_section(m, x):
    with m.section:
        for i in range(len(x)):
            yield x[i]


CLOSING = (ValueError, GeneratorExit)


def closing_by_a_global_tuple(m, x):
    try:
        for i in range(len(x)):
            yield x[i]
    except CLOSING:  # a module's tuple naming GeneratorExit
        m.log.append("closed")
        raise


def yielding_finally(m, x):
    try:
        for i in range(len(x)):
            yield x[i]
    finally:
        yield x[0] * -1.0  # (a user's bug: Python's close() ignores it and reports RuntimeError)


def breaks_out_of_a_tuple_handler(m, x, y):
    total = x[0] * 0.0
    for row in closing_by_a_global_tuple(m, x):
        total = total + row
        break
    for row in yielding_finally(m, x):
        total = total + row
        break
    m.w = m.w + 0.01 * total[:, None]
    return total


def breaks_out_of_closing(m, x, y):
    total = x[0] * 0.0
    for row in closing_rows(m, x):
        total = total + row
        break
    m.w = m.w + 0.01 * total[:, None]
    return total


def returns_out_of_a_section(m, x, y):
    for row in rows_in_a_section(m, x):
        m.w = m.w + 0.01 * row[:, None]
        return row


def test_a_generator_closed_by_break_runs_what_sees_the_generator_exit():
    """`except GeneratorExit` around the yield, and a `with` whose `__exit__` is told the
    generator closed: the graph does not deliver the GeneratorExit, so such loops run eagerly
    (the handler and the exit's argument are eager's)."""
    def make(f):
        m = Model()
        m.section = Section(m.log)
        return f, {"m": m}

    for f in (breaks_out_of_closing, returns_out_of_a_section, breaks_out_of_a_tuple_handler):
        jf = check(lambda: make(f), _calls(8), min_graph_calls=0)
        assert "generator" in fallback_reasons(jf), jf.explain()


def counter_gen(m, n, stop):
    for i in range(n):
        m.t += 1
        yield i, m.t
        if i == stop:
            return


def generated(m, x, n, stop, brk):
    acc = x[0]
    for i, t in counter_gen(m, n, stop):
        acc = acc * 0.5 + x[i % len(x)] * t
        if i == brk:
            break
    else:
        acc = acc + 1.0
    m.w = m.w + acc[:2] @ m.w[:2]
    return acc


_SHAPE = st.tuples(st.integers(0, 5), st.integers(-1, 5), st.integers(-1, 5))  # items, return at, break at


@settings(max_examples=25, deadline=None)
@given(st.lists(_SHAPE, min_size=1, max_size=2), st.lists(st.integers(0, 1), min_size=5, max_size=10))
def test_generated_counts_returns_and_breaks(pool, picks):
    # a few shapes, repeated: each gets a graph (its values guarded), and a switch fails a guard
    shapes = [pool[p % len(pool)] for p in picks]
    calls = [lambda s, k=k, sh=sh: (s["m"], random_array(k, (3, 4)), *sh) for k, sh in enumerate(shapes)]
    check(_make(generated), calls, min_graph_calls=0)


def counted_rows(m, x):
    for r in x:
        m.t += 1  # the generator's own writes, all before the consumer's work
        yield float(r.sum()) * m.t


def halves(n):
    for i in range(n):
        yield i // 2


def collected(m, x, y):
    rows = list(counted_rows(m, x[:3]))
    total = sum(counted_rows(m, y[:2]), 0.5)
    order = sorted(set(halves(5)), key=lambda k: -k)
    top = max(counted_rows(m, y[2:5]))
    pairs = tuple(batches(x, y, 5))
    return rows, total, order, top, len(pairs), pairs[-1][0], m.t


def test_list_sum_sorted_and_max_of_a_generator():
    jf = check(_make(collected), _calls(8), min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()
