"""State under the JIT: every kind of write a function can make, committed all-or-nothing after the
graph ran (effects — RNG, print, exceptions — are in test_effects.py).

Each test compares eager and jit side by side after every call (result, printed text, reachable
state, arguments, global RNG) and checks that graphs really ran.
"""
import numpy as np

import janus_like as jl

from .harness import LiveGlobals, call_sequence, check, fallback_reasons, load_module, random_array


# ------------------------------------------------------------------ Variables
def test_variable_assign_assign_add_assign_sub():
    def make():
        v = jl.Variable(np.zeros(3, np.float32))
        w = jl.Variable(np.ones((2, 3), np.float32))
        c = jl.Variable(np.arange(3, dtype=np.float32))

        def f(x):
            v.assign_add(x * 0.5)
            w.assign_sub(np.tanh(x))
            c.assign(v * 2.0)  # reads the value assigned above
            return v + 1.0, np.sum(w)

        return f, {"v": v, "w": w, "c": c}

    check(make, call_sequence(8, lambda s, i: (random_array(i, (3,), np.float32),)), min_graph_calls=5)


def test_variable_augmented_ops_and_item_assignment():
    def make():
        def f(v, x):
            v += x
            v -= 0.25
            v *= 1.5
            v[0] = 2.0
            v[1:3] = x[1:3] * 0.1
            return v.value()

        return f, {"v": jl.Variable(np.ones(4))}

    check(make, call_sequence(7, lambda s, i: (s["v"], random_array(i, (4,)))), min_graph_calls=4)


def test_variable_argument_assign_and_returned():
    """A Variable passed as an argument and returned: the caller sees the same object."""
    def make():
        def f(var, x):
            var.assign(var * 0.9 + x)
            return var

        return f, {"v": jl.Variable(np.zeros(2))}

    jf = check(make, call_sequence(7, lambda s, i: (s["v"], random_array(i, (2,)))))
    assert jf.stats()["graph_calls"] == 4


def test_variable_read_after_write_in_same_call():
    def make():
        v = jl.Variable(np.full(3, 2.0))

        def f(x):
            before = v * 1.0
            v.assign(v * x)
            after = v + 0.0
            return before, after

        return f, {"v": v}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)))


# ------------------------------------------------------------------ attributes, globals
class _Counter:
    def __init__(self):
        self.n = 0
        self.total = np.zeros(3)
        self.last = None
        self.history = []


def test_setattr_on_object_argument():
    def make():
        def f(obj, x):
            obj.total = obj.total + x
            obj.last = x * 2.0
            obj.label = "seen"
            obj.history = obj.history + [obj.n]
            return obj.total.sum()

        return f, {"c": _Counter()}

    jf = check(make, call_sequence(8, lambda s, i: (s["c"], random_array(i, (3,)))), min_graph_calls=0)
    assert jf.stats()["calls"] == 8


def test_setattr_python_float_attribute():
    def make():
        def f(obj, x):
            obj.scale = obj.scale * 0.5
            return x * obj.scale

        c = _Counter()
        c.scale = 1.0
        return f, {"c": c}

    check(make, call_sequence(8, lambda s, i: (s["c"], random_array(i, (3,)))), min_graph_calls=0)


def test_setattr_counter_int_attribute_stays_int():
    def make():
        def f(obj, x):
            obj.n = obj.n + 1
            return x * 2.0

        return f, {"c": _Counter()}

    jf = check(make, call_sequence(8, lambda s, i: (s["c"], random_array(i, (3,)))))
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


def test_attribute_augmented_assignment_on_array_attribute():
    """obj.total += x mutates the array in place (the same object stays on the attribute)."""
    def make():
        c = _Counter()
        alias = c.total  # the caller holds the same array

        def f(obj, x):
            obj.total += x
            obj.total[0] = -1.0
            return obj.total

        return f, {"c": c, "alias": alias}

    check(make, call_sequence(7, lambda s, i: (s["c"], random_array(i, (3,)))))


_GLOBALS_SRC = """
import numpy as np

COUNT = 0
ACC = np.zeros(2)
LAST = None
LOG = [np.zeros(2)]
BUF = np.zeros(2)


def f(x):
    global ACC, LAST
    ACC = ACC + x
    LAST = ACC * 0.5
    LOG.append(LAST)
    LOG.pop(0)
    BUF[0] += 1.0
    return ACC * 2.0


def g(x):
    global COUNT
    COUNT = COUNT + 3
    return x + COUNT
"""


def test_global_statement_writes_module_globals(tmp_path):
    """Each side gets its own copy of the module, so the globals are separate state."""
    def make():
        mod = load_module(tmp_path, _GLOBALS_SRC, "globals_prog")
        return mod.f, {"globals": LiveGlobals(mod, ["ACC", "LAST", "LOG", "BUF"])}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (2,)),)))
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


def test_global_int_counter_stays_int(tmp_path):
    def make():
        mod = load_module(tmp_path, _GLOBALS_SRC, "globals_prog")
        return mod.g, {"globals": LiveGlobals(mod, ["COUNT"])}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (2,)),)))
    assert jf.stats()["graph_calls"] >= 3, jf.explain()


# ------------------------------------------------------------------ in-place ndarray updates
def test_inplace_add_on_argument():
    def make():
        def f(x, y):
            x += 1.0
            y *= 2.0
            return x + y

        return f, {"x": np.zeros(3), "y": np.ones(3)}

    check(make, call_sequence(7, lambda s, i: (s["x"], s["y"])))


def test_slice_assignment_on_argument():
    def make():
        def f(x, v):
            x[1:3] = 0.0
            x[0] = v[0]
            x[-1] += v[1]
            return x.sum()

        return f, {"x": np.arange(5.0)}

    check(make, call_sequence(7, lambda s, i: (s["x"], random_array(i, (2,)))))


def test_fancy_index_add_with_repeated_indices():
    """x[idx] += v with repeated indices adds only once per index (NumPy's buffered semantics)."""
    def make():
        def f(x, idx, v):
            x[idx] += v
            return x * 1.0

        return f, {"x": np.zeros(5)}

    idx = np.array([0, 1, 1, 3, 3, 3])
    check(make, call_sequence(7, lambda s, i: (s["x"], idx, random_array(i, (6,)))))


def test_fancy_index_setitem_2d_rows():
    def make():
        def f(table, rows, v):
            table[rows] = v
            table[:, 0] -= 1.0
            return table

        return f, {"t": np.zeros((4, 3))}

    rows = np.array([2, 0, 2])
    check(make, call_sequence(7, lambda s, i: (s["t"], rows, random_array(i, (3, 3)))))


def test_copyto_and_ufunc_out():
    def make():
        def f(a, b, c):
            np.add(a, b, out=a)
            np.copyto(c, a * 2.0)
            np.multiply(b, 0.5, out=b)
            return a, c

        return f, {"a": np.zeros(4), "b": np.ones(4), "c": np.zeros(4)}

    check(make, call_sequence(7, lambda s, i: (s["a"], s["b"], s["c"])))


def test_inplace_dtype_cast_int_array():
    """x += 0.5 on an int array is a casting error in NumPy (same_kind): must raise like eager."""
    def make():
        def f(x, n):
            x += n
            return x

        return f, {"x": np.arange(4)}

    calls = call_sequence(6, lambda s, i: (s["x"], 2)) + [lambda s: (s["x"], 0.5)] * 2 + call_sequence(2, lambda s, i: (s["x"], 1))
    check(make, calls)


def test_clip_with_out_on_dict_values():
    def make():
        def f(grads):
            for g in grads.values():
                np.clip(g, -1.0, 1.0, out=g)
            return grads["a"].sum() + grads["b"].sum()

        return f, {}

    check(make, call_sequence(7, lambda s, i: ({"a": random_array(i, (3,)) * 3, "b": random_array(i + 50, (2, 2)) * 3},)))


def test_write_through_basic_slice_view():
    def make():
        def f(x):
            row = x[1]
            row += 5.0  # writes x through the view
            col = x[:, 0]
            col[...] = row[0]
            return x, row

        return f, {"x": np.zeros((3, 2))}

    check(make, call_sequence(7, lambda s, i: (s["x"],)))


def test_write_through_transposed_view_falls_back():
    def make():
        def f(x):
            t = x.T
            t[0] += 1.0
            return x

        return f, {"x": np.zeros((2, 3))}

    jf = check(make, call_sequence(6, lambda s, i: (s["x"],)), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 or "view-write" in fallback_reasons(jf), jf.explain()


# ------------------------------------------------------------------ containers
def test_list_append_and_dict_setitem_on_arguments():
    def make():
        def f(log, cache, x):
            y = np.tanh(x)
            log.append(y)
            log.append(len(log))
            cache["last"] = y * 2.0
            cache["count"] = cache.get("count", 0) + 1 if "count" in cache else 1
            return log[-2]

        return f, {"log": [], "cache": {}}

    jf = check(make, call_sequence(8, lambda s, i: (s["log"], s["cache"], random_array(i, (2,)))), min_graph_calls=0)
    # the list grows every call: a new length every time, so graphs may keep missing; the results
    # must still match
    assert jf.stats()["calls"] == 8


def test_dict_item_set_and_list_extend_fixed_structure():
    def make():
        def f(state, buf, x):
            state["h"] = np.tanh(state["h"] + x)
            state["seen"] = True
            buf[0] = state["h"] * 2.0
            buf.extend([x])
            buf.pop()
            return state["h"]

        return f, {"state": {"h": np.zeros(3), "n": 0.0}, "buf": [np.zeros(3)]}

    jf = check(make, call_sequence(8, lambda s, i: (s["state"], s["buf"], random_array(i, (3,)))))
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


def test_dict_item_counter_stays_python_int():
    def make():
        def f(state, x):
            state["n"] = state["n"] + 1
            return x * 2.0

        return f, {"state": {"n": 0}}

    check(make, call_sequence(8, lambda s, i: (s["state"], random_array(i, (3,)))))


def test_returned_varying_python_int_stays_int():
    def make():
        def f(k, x):
            return k + 1, x * k

        return f, {}

    check(make, [lambda s, i=i: (i, random_array(i, (2,))) for i in range(8)])


def test_local_containers_are_not_state():
    def make():
        def f(xs):
            out = []
            acc = {}
            for i, x in enumerate(xs):
                out.append(x * i)
                acc[i] = np.sum(x)
            out.extend([acc[0], acc[1]])
            return out

        return f, {}

    check(make, call_sequence(6, lambda s, i: ([random_array(i, (2,)), random_array(i + 1, (2,))],)))


# ------------------------------------------------------------------ tensors
def test_functional_tensor_setitem():
    def make():
        def f(t, v):
            t[0] = v
            t[1:] = t[1:] * 2.0
            t += 1.0
            return t, t.sum()

        return f, {"t": jl.tensor(np.zeros(4))}

    check(make, call_sequence(7, lambda s, i: (s["t"], float(i))))


_TENSOR_OF_GRAPH_VALUE_BUG = ("jl.tensor(x) on a graph value inside a jitted function builds an object-dtype Tensor "
                              "of Sym placeholders (call_library runs janus_like.tensor.tensor on the Sym)")


def test_tensor_setitem_on_local_copy():
    def make():
        def f(x):
            t = jl.tensor(x) * 1.0
            t[1] = 5.0
            return t

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)))


# ------------------------------------------------------------------ return values
def test_returning_views_of_arguments():
    def make():
        def f(x):
            return x[1:], x.T, x.reshape(-1), x[0]

        return f, {"x": np.arange(6.0).reshape(2, 3)}

    jf = check(make, call_sequence(6, lambda s, i: (s["x"],)))
    # a returned basic-slice view must still be a view of the argument, as eagerly
    out = jf(np.arange(6.0).reshape(2, 3))
    assert out[0].base is not None


def test_returned_view_is_writable_alias_of_argument():
    def make():
        def f(x):
            return x[1:]

        return f, {}

    jf = check(make, call_sequence(5, lambda s, i: (np.arange(4.0),)))
    x = np.arange(4.0)
    v = jf(x)
    v[0] = 99.0
    assert x[1] == 99.0


def test_returning_the_same_array_twice():
    def make():
        def f(x):
            y = x * 2.0
            return y, y, x, x

        return f, {}

    jf = check(make, call_sequence(6, lambda s, i: (random_array(i, (3,)),)))
    a, b, c, d = jf(np.ones(3))
    assert a is b, "the same computed array returned twice must be one object, as eagerly"


def test_returning_the_argument_itself_after_write():
    def make():
        def f(x):
            x[0] = 7.0
            return x

        return f, {}

    jf = check(make, call_sequence(6, lambda s, i: (np.zeros(3),)))
    x = np.zeros(3)
    assert jf(x) is x


def test_returning_constants_and_python_values():
    def make():
        def f(x, k):
            table = np.arange(3.0)
            return table, k * 2, "label", None, [k, (k, x)], {"n": k}

        return f, {}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (2,)), 3)))


def test_returned_constant_is_fresh_each_call():
    """Mutating a returned array must not change what the next call returns."""
    def make():
        def f(x):
            base = np.zeros(3)
            return base + 0.0, np.ones(2)

        return f, {}

    calls = call_sequence(6, lambda s, i: (random_array(i, (1,)),))
    jf = check(make, calls)
    a, b = jf(np.ones(1))
    a[0] = 5.0
    b[0] = 5.0
    a2, b2 = jf(np.ones(1))
    assert a2[0] == 0.0 and b2[0] == 1.0


def test_variable_method_that_eager_lacks_raises_in_jit_too():
    """The generator's Variable stand-in has exactly the Variable's methods: a call eager
    rejects (`read_value`, which the stand-in once had) is rejected under jit as well."""
    def make():
        v = jl.Variable(np.zeros(2), name="v")

        def f(x):
            return v.read_value() + x

        return f, {"v": v}

    check(make, [lambda s: (np.ones(2),)] * 6, min_graph_calls=0)
