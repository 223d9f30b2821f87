"""Object identities the step computes with: `id(p)` and `hash(obj)` keying an optimizer's state,
tuple keys holding objects or Python ints the graph reads as inputs, `dict(zip(ids, ...))`, and
`is` between Python numbers. Each was a wrong result: `id()` of an array was the id of the
generator's own value, `id()` of an object was a constant no guard pinned (a new object in its
place kept the old id), `hash()` of an object hashed the generator's wrapper, a tuple key's items
were neither unwrapped nor refused (`("E", a)` and `("E", b)` stayed two keys when a == b), and
`a is b` of two Python ints was decided by the generator's values. Now the identity is guarded
(a new object fails the guard and the call runs eagerly), or the step stays eager with a reason.
Eager and jit side by side after every call; dicts keyed by ids are reached through a function,
since each side's ids are its own."""
import numpy as np

from .harness import check, fallback_reasons


class Param:
    def __init__(self, a):
        self.data = a


def _hidden_dict_state(**items):
    hidden = {}
    return dict(items, table=lambda: hidden)


def test_an_optimizer_state_keyed_by_id_of_the_parameter_array():
    def make():
        def step(x, st):
            d = st["table"]()
            k = id(st["W"])
            if k not in d:
                d[k] = np.zeros(3)
            buf = d[k]
            buf += x
            st["W"] -= 0.1 * buf
            return len(d), float(buf.sum())

        return step, _hidden_dict_state(W=np.ones(3))

    def swap(st, i):  # from call 5 on, a new parameter array: the identity guard fails, eager runs
        if i == 5:
            st["W"] = st["W"].copy()
        return np.full(3, 1.0 + i), st

    check(make, [lambda st, i=i: swap(st, i) for i in range(9)], min_graph_calls=3)


def test_id_and_hash_of_input_objects_replaced_between_calls():
    def make():
        def step(x, st):
            d = st["table"]()
            p = st["p"]
            for k in (id(p), hash(p), (p, "m")):
                d[k] = d.get(k, 0) + 1
            p.data += x
            return d[id(p)], d[hash(p)], d[(p, "m")], len(d)

        return step, _hidden_dict_state(p=Param(np.ones(3)))

    def call(st, i):
        if i in (5, 6):  # another object of the class in its place
            st["p"] = Param(st["p"].data)
        return np.ones(3) * i, st

    check(make, [lambda st, i=i: call(st, i) for i in range(10)], min_graph_calls=3)


def test_tuple_keys_of_python_ints_the_graph_reads_as_inputs():
    def make():
        def step(a, b, edges, st):
            grads = {}
            for w in (a, b):
                g = grads.setdefault(("E", w), np.zeros(2))
                g += st["E"][w]
            out = np.zeros(2)
            for u, v in edges:
                out += st["wts"].get((u, v), 1.0) * st["E"][u]
            return len(grads), out

        return step, {"E": np.arange(10.0).reshape(5, 2), "wts": {(0, 1): 0.5, (1, 2): 2.0, (1, 1): 4.0}}

    pairs = [(0, 1), (0, 1), (0, 1), (0, 1), (3, 3), (2, 2), (0, 1), (1, 1), (4, 2)]
    edges = [[(0, 1), (1, 2)], [(1, 2), (0, 1)], [(2, 0), (0, 2)], [(0, 2), (2, 0)], [(1, 1), (0, 1)],
             [(1, 2), (1, 1)], [(2, 1), (0, 1)], [(0, 1), (1, 2)], [(1, 1), (1, 2)]]
    calls = [lambda st, i=i: (*pairs[i], edges[i], st) for i in range(len(pairs))]
    check(make, calls, min_graph_calls=0)


def test_dict_of_zipped_python_ints_the_graph_reads_as_inputs():
    def make():
        def step(ids, st):
            pos = dict(zip(ids, range(len(ids))))
            return len(pos), sum(st["E"][w] * p for w, p in pos.items())

        return step, {"E": np.arange(10.0).reshape(5, 2)}

    ids = [(0, 1), (0, 1), (0, 1), (0, 1), (3, 3), (2, 2), (0, 1), (1, 1), (4, 2), (2, 4)]
    check(make, [lambda st, i=i: (ids[i], st) for i in range(len(ids))], min_graph_calls=0)


def test_is_between_python_numbers_stays_eager():
    big, other_big = 10 ** 6, int("1000000")  # equal, and two objects

    def make():
        def step(a, b, x):
            return x * a, a is b, a is not b

        return step, {}

    values = [(1, 2), (1, 1), (3, 3), (big, big), (big, other_big), (big, big), (1, 1), (2, 5)]
    jf = check(make, [lambda st, i=i: (*values[i], np.ones(2)) for i in range(len(values))], min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()


def test_copyto_into_a_new_array_copies_the_source():
    """`v = np.zeros(4); np.copyto(v, x)` made v's value x's own node (and a broadcast source a
    read-only view of it): the graph returned the caller's x (a later `x += 1.0` showed in v),
    and a stored row was a view of the input. The destination now holds a copy."""
    def make():
        def step(x, st):
            v = np.zeros(4)
            np.copyto(v, x)
            w = np.zeros((2, 4))
            np.copyto(w, st["u"])
            st["b"] = st["b"] * 1.0
            np.copyto(st["b"], x)
            x += 1.0
            w[0] += 1.0
            return v, w

        return step, {"u": np.arange(4.0), "b": np.ones(4)}

    check(make, [lambda st, i=i: (np.full(4, 1.0 * i), st) for i in range(7)], min_graph_calls=3)
