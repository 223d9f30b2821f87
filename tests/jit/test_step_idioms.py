"""Training-step idioms a probe round found running eagerly, side by side with eager:
- a model switched to `eval()` and back inside the step (the module walk appends each sub-module
  to a local list);
- `max(float(n) for n in norms)`, `max(norms)` and `min(...)` of NumPy scalars (gradient norms);
- a `functools.lru_cache` helper of sizes (positional encodings), whose result is the cached array;
- a functional step that returns a new namedtuple of its state;
- an epoch shuffled in place (`np.random.shuffle(idx)`, `rng.shuffle(rows)`);
- finite `itertools` iterators over the function's lists, and `max(d.values())`;
- `:=`, `divmod` of counters, `operator.mul` (through a partial), `math.isclose(..., rel_tol=)`,
  a `functools.cached_property` read for the first time in the step,
  and `np.random.seed(k)` / `np.random.default_rng(k)` with k a graph value (eager, named).
"""
import collections
import functools
import math
import operator

import numpy as np
import pytest

import janus_like as jl
from janus_like import F, nn

from .harness import assumption_kinds, call_sequence, check, fallback_reasons, load_module, random_array


def test_eval_mode_inside_the_step():
    """Every third call evaluates with dropout off; `model.eval()` / `model.train()` write
    `training` on every sub-module."""
    def make():
        r = np.random.default_rng(0)
        model = nn.Sequential(nn.Linear(4, 8, rng=r), nn.ReLU(), nn.Dropout(0.3, rng=np.random.default_rng(1)),
                              nn.Linear(8, 2, rng=r))
        state = {"i": 0}

        def step(x, y):
            state["i"] += 1
            if state["i"] % 3 == 0:
                model.eval()
                out = model(x)
                model.train()
                return float(np.mean(np.argmax(out.numpy(), 1) == y))
            with jl.GradientTape() as tape:
                loss = F.cross_entropy(model(x), y)
            vs = model.trainable_variables
            for v, g in zip(vs, tape.gradient(loss, vs)):
                v.assign_sub(0.1 * g)
            return loss

        return step, {"model": model, "state": state}

    calls = call_sequence(15, lambda s, i: (random_array(i, (6, 4)).astype(np.float32), np.arange(6) % 2))
    jf = check(make, calls, min_graph_calls=8)
    assert "unsupported-call" not in fallback_reasons(jf), jf.explain()


class Box:
    def __init__(self, v):
        self.v = v


def test_a_local_list_of_input_objects():
    def make():
        boxes = [Box(np.ones(2)), Box(np.zeros(2))]

        def f(x):
            found = []
            for b in boxes:
                found.append(b)
            found.insert(0, boxes[1])
            for b in found:
                b.v = b.v + x
            return len(found), found[0].v

        return f, {"boxes": boxes}

    check(make, call_sequence(6, lambda s, i: (random_array(i, (2,)),)), min_graph_calls=2)


@pytest.mark.parametrize("expr", ["max(float(np.sum(g)) for g in gs)", "min(np.linalg.norm(g) for g in gs)",
                                  "max([np.linalg.norm(g) for g in gs])", "max(np.sum(gs[0]), np.sum(gs[1]))",
                                  "min(np.max(g) for g in gs) * np.ones(2, np.float32)",
                                  "sum(np.sum(g) for g in gs)",
                                  "max(np.sum(g) for g in gs[:1])"])
def test_max_and_min_of_gradient_norms(tmp_path, expr):
    """Python's own max/min run on the NumPy scalars when the graph runs: eager's item and type,
    NaN included (the third call has one)."""
    module = load_module(tmp_path, f"import numpy as np\n\ndef f(gs):\n    return {expr}\n")

    def make():
        return module.f, {}

    def call(s, i):
        gs = [random_array(i + k, (3,)).astype(np.float32) for k in range(3)]
        if i == 3:
            gs[1][0] = np.nan
        return (gs,)

    check(make, call_sequence(6, call), min_graph_calls=2)


def test_max_of_mixed_dtypes_speculates_which_one():
    # a float64 and a float32 sum: which one max gives decides the result's dtype, so the graph
    # asserts the one the warm-up got (tests/jit/test_min_max_picks.py); call 5 gets the other
    def f(a, b):
        return max(np.sum(a), np.sum(b))

    def make():
        return f, {}

    def call(s, i):
        return random_array(i, (3,)) + (20.0 if i != 5 else -20.0), random_array(i, (3,)).astype(np.float32)

    jf = check(make, call_sequence(8, call), min_graph_calls=3)
    assert "pick" in assumption_kinds(jf) and jf.stats()["assert_failures"] == 1, jf.explain()


@functools.lru_cache(maxsize=None)
def _posenc(n, d):
    pos, i = np.arange(n)[:, None], np.arange(d)[None, :]
    angle = pos / np.power(10000.0, (2 * (i // 2)) / d)
    return np.where(i % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def test_an_lru_cache_helper_of_sizes():
    def make():
        w = jl.Variable(np.random.default_rng(0).standard_normal((4, 1)).astype(np.float32))

        def step(x):
            h = x + _posenc(x.shape[0], 4)
            with jl.GradientTape() as tape:
                loss = F.mean((h @ w) ** 2)
            w.assign_sub(0.1 * tape.gradient(loss, w))
            return loss, _posenc(2, 4)

        return step, {"w": w}

    jf = check(make, call_sequence(8, lambda s, i: (random_array(i, (3 + i % 2, 4)).astype(np.float32),)),
               min_graph_calls=3)
    assert not fallback_reasons(jf), jf.explain()


def _cached_table(st, x):
    table = _posenc(3, 2)
    st["seen"].append(table)  # eager: the very same cached array every call
    st["w"] -= 0.1 * (x * table).sum(0)
    return table


def test_an_lru_cache_result_is_the_cached_object():
    """The graph returned (and stored) a copy of the cached array, where eager hands out the
    cache's own object every call."""
    calls = call_sequence(6, lambda s, i: (s, random_array(i, (3, 2)).astype(np.float32)))
    check(lambda: (_cached_table, {"seen": [], "w": np.zeros(2, np.float32)}), calls, min_graph_calls=2)


def test_a_write_into_a_cached_array_stays_eager():
    def make():
        cache = functools.lru_cache(maxsize=None)(lambda n: np.zeros(n))  # one cache a side

        def f(x):
            acc = cache(len(x))
            acc += x  # changes the cached array: the next call sees it
            return acc.copy()

        return f, {}

    jf = check(make, call_sequence(5, lambda s, i: (random_array(i, (3,)),)), min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and "lru_cache" in jf.explain(), jf.explain()


def test_an_lru_cache_cleared_between_calls_computes_again():
    """`cache_clear()` after a global the helper reads changed: eager's next call computes a
    new table, which the graph (holding the old one as a constant) did not see."""
    def make():
        cfg = {"scale": 1.0}
        mask = functools.lru_cache(maxsize=None)(lambda n: np.ones(n) * cfg["scale"])  # one cache a side

        def step(x):
            return (x * mask(x.shape[0])).sum()

        return step, {"cfg": cfg, "mask": mask}

    def call(s, i):
        if i in (6, 9):
            s["cfg"]["scale"] += 1.0
            s["mask"].cache_clear()
        return (random_array(i, (4,)),)

    jf = check(make, [lambda s, i=i: call(s, i) for i in range(12)], min_graph_calls=4)
    assert "identity" in {a.kind for g in jf.compiled for a in g.assumptions}, jf.explain()


State = collections.namedtuple("State", "w m step")


def test_a_functional_step_returns_a_new_namedtuple():
    """JAX-style: the state goes in and a new `State(...)` comes out; the step counter, a field,
    changes every call (its value guard is relaxed after repeated failures)."""
    def step(s, x, y):
        w = jl.tensor(s.w)
        with jl.GradientTape() as tape:
            tape.watch(w)
            loss = F.mean((x @ w - y) ** 2)
        m = 0.9 * s.m + tape.gradient(loss, w).numpy()
        new = State(s.w - 0.05 * m, m=m, step=s.step + 1)
        return new, new.step, new.m.shape, len(new)

    def make():
        return step, {}

    def call(s, i):
        state = State(random_array(1, (3, 1)), np.zeros((3, 1)), i)
        return state, random_array(i, (5, 3)), random_array(i + 20, (5, 1))

    check(make, call_sequence(12, call), min_graph_calls=6)


@pytest.mark.parametrize("source", ["global", "generator"])
def test_an_epoch_shuffled_in_place(source):
    """`np.random.shuffle(idx)` (or `rng.shuffle`) of a local index array, of a local copy of the
    rows, and of the caller's own array (shuffled in place for the caller, as eager does): the
    same draws as eager, in the same order, and the same arrays after."""
    def make():
        rng = np.random.default_rng(3)
        w = jl.Variable(np.random.default_rng(0).standard_normal((5, 1)).astype(np.float32))
        shuffle = np.random.shuffle if source == "global" else rng.shuffle

        def step(X, Y, order):
            idx = np.arange(len(X))
            shuffle(idx)
            rows = X.copy()
            shuffle(rows)
            shuffle(order)
            total = 0.0
            for s in range(0, len(X), 4):
                b = idx[s:s + 4]
                with jl.GradientTape() as tape:
                    loss = F.mean((X[b] @ w - Y[b]) ** 2)
                w.assign_sub(0.05 * tape.gradient(loss, w))
                total += float(loss)
            return total, rows[0], order[:2]

        return step, {"w": w, "rng": rng}

    def call(s, i):
        return (random_array(i, (8, 5)).astype(np.float32), random_array(i + 30, (8, 1)).astype(np.float32),
                np.arange(6) * (i + 1))

    check(make, call_sequence(8, call), min_graph_calls=4)


@pytest.mark.parametrize("expr", ["[float(np.sum(g)) for g in itertools.islice(gs, 1, None)]",
                                  "[a + b for a, b in itertools.pairwise(gs)]",
                                  "sum(a * b for a, b in itertools.product(gs[:2], gs[1:]))",
                                  "list(itertools.accumulate(gs))[-1]",
                                  "[k for k, _ in itertools.zip_longest(names, gs)]",
                                  "max({k: float(np.sum(g)) for k, g in zip(names, gs)}.values())",
                                  "min(np.max(g) for g in itertools.chain(gs, [gs[0] * 2.0]))"])
def test_finite_itertools_over_the_functions_lists(tmp_path, expr):
    module = load_module(tmp_path, "import itertools\nimport numpy as np\n\n"
                                   f"def f(gs, names):\n    return {expr}\n")

    def make():
        return module.f, {}

    check(make, call_sequence(6, lambda s, i: ([random_array(i + k, (3,)) for k in range(3)], ["a", "b", "c"])),
          min_graph_calls=2)


@pytest.mark.parametrize("expr, reason", [("list(itertools.starmap(lambda a, b: a * b, zip(gs, gs)))[-1]",
                                           "would call the user function"),
                                          ("[g for g, _ in zip(itertools.cycle(gs), range(4))]",
                                           "creating a cycle")])
def test_itertools_calling_user_code_or_without_end_stay_eager(tmp_path, expr, reason):
    module = load_module(tmp_path, "import itertools\nimport numpy as np\n\n"
                                   f"def f(gs):\n    return {expr}\n")
    jf = check(lambda: (module.f, {}), call_sequence(5, lambda s, i: ([random_array(i + k, (3,)) for k in range(3)],)),
               min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0 and reason in jf.explain(), jf.explain()


class Lazy:
    def __init__(self, w):
        self.w = w

    @functools.cached_property
    def wt(self):
        return self.w.T * 2.0


_SCALE = functools.partial(operator.mul, 0.5)


def walrus_divmod_cached(o, x, state):
    state["n"] += 1
    q, r = divmod(state["n"], 3)
    if (total := float(x.sum())) > 0.0:
        x = x * q
    near = math.isclose(total, state["last"], rel_tol=0.5, abs_tol=0.25)  # constant keywords
    state["last"] = total
    return _SCALE(x @ o.w) + (o.wt @ x[:2].T).sum() + r, total, divmod(x[0], 0.75), near, operator.neg(total)


def test_walrus_divmod_and_a_cached_property():
    objs = [Lazy(random_array(k, (3, 2))) for k in range(4)]  # the first reads of wt are in graphs

    def make():
        return walrus_divmod_cached, {"objs": [Lazy(o.w.copy()) for o in objs], "state": {"n": 0, "last": 0.0}}

    calls = call_sequence(12, lambda s, i: (s["objs"][i % 4], random_array(i, (2, 3)), s["state"]))
    jf = check(make, calls, min_graph_calls=6)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def test_reseeding_with_a_graph_value_stays_eager_with_its_reason(tmp_path):
    mod = load_module(tmp_path, """
        import numpy as np

        def reseed(x, k):
            np.random.seed(k)
            return x + np.random.randn(3)

        def fresh(x, k):
            return x + np.random.default_rng(k).normal(size=3)
    """)
    for f in (mod.reseed, mod.fresh):
        calls = call_sequence(8, lambda s, i: (random_array(i, (3,)), i % 5))
        jf = check(lambda: (f, None), calls, min_graph_calls=0)
        assert "unsupported-call" in fallback_reasons(jf), jf.explain()
        assert "RandomState" not in jf.explain(), jf.explain()  # the reason names the call, not a probe


def snapshot_and_range(st, x):
    snap = {**st["m"], "extra": 1}  # a state dict spread into a new one (an internal error)
    loss = (x * st["w"]).sum()
    st["w"] -= 0.1 * x
    inside = -1.0 < loss < 1.0  # a chained comparison of NumPy scalars: np.bool_ (it was eager)
    if 0.0 <= loss < 2.0 <= st["cap"]:
        st["w"] *= 0.5
    return snap, inside, 0.0 < float(loss) < 1.0


def test_dict_spread_of_state_and_chained_comparisons_of_numpy_scalars():
    calls = [lambda s, i=i: (s, random_array(i, (3,)) * (3.0 if i % 4 == 0 else 0.5)) for i in range(12)]
    jf = check(lambda: (snapshot_and_range, {"m": {"a": 1.0, "b": 2}, "w": np.ones(3), "cap": 3.0}), calls,
               min_graph_calls=5)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def _ema_step(st, x):
    ema = st["ema"]
    ema["w"] = 0.5 * ema.get("w", x) + x  # a default the graph computes (it was refused as a dict key)
    st["w"] -= 0.1 * ema["w"]
    return ema.get("missing", x * 2)


def test_dict_get_with_an_array_default():
    calls = call_sequence(8, lambda s, i: (s, random_array(i, (3,))))
    jf = check(lambda: (_ema_step, {"ema": {}, "w": np.zeros(3)}), calls, min_graph_calls=4)
    assert "data-dependent-python" not in fallback_reasons(jf), jf.explain()


def _metrics_step(st, x):
    st["w"] -= 0.1 * x
    st["m"]["step"] = st["m"].get("step", 0) + 1
    st["m"]["loss"] = float(st["w"].sum())
    st["m"].update({"last_max": st["w"].max()}, seen=True)
    return st["m"].get("absent", -1)


def test_metrics_written_into_a_state_dict_are_not_speculated():
    """`m.get("step", 0)` read the whole dict (each value guarded: the loss written last call
    failed its guard twice), and NumPy floats written into a dict were guarded by value too."""
    calls = call_sequence(10, lambda s, i: (s, random_array(i, (3,))))
    jf = check(lambda: (_metrics_step, {"w": np.zeros(3), "m": {}}), calls, min_graph_calls=6)
    assert not fallback_reasons(jf), jf.explain()


@pytest.mark.parametrize("expr", ["h.clip(min=0)", "h.clip(max=0.5)", "h.clip(-0.5, max=0.5)", "h.clip(min=lo)",
                                  "h.clip(None, 0.25)", "np.clip(h, min=0, max=1)"])
def test_clip_with_numpys_keyword_names(tmp_path, expr):
    """`x.clip(min=0)`: the array method's keywords are NumPy's `min` and `max` (it ran eagerly)."""
    module = load_module(tmp_path, "import numpy as np\n\ndef f(x, w, lo):\n    h = x @ w\n"
                                   f"    return {expr}\n")

    def call(s, i):
        return random_array(i, (3, 4)), s["w"], -0.1 * i

    jf = check(lambda: (module.f, {"w": random_array(9, (4, 2))}), call_sequence(7, call), min_graph_calls=4)
    assert not fallback_reasons(jf), jf.explain()


@pytest.mark.parametrize("expr", ["h.sum(axis=axes)", "np.mean(h, axis=axes, keepdims=True)", "h.max(axes)",
                                  "np.transpose(h, perm)", "h.reshape(shape)", "np.linalg.norm(h, axis=axes)"])
def test_axes_and_shapes_passed_as_tuples(tmp_path, expr):
    """A tuple argument where NumPy takes a static one (a generic norm helper's axes): its
    items are guarded constants (it raised an op-error, and the step stayed eager)."""
    module = load_module(tmp_path, "import numpy as np\n\ndef f(x, axes, perm, shape):\n"
                                   f"    h = x * 2.0\n    return {expr}\n")

    def call(s, i):
        return random_array(i, (2, 3, 4)), (0, 2), (2, 0, 1), (6, 4)

    jf = check(lambda: (module.f, {}), call_sequence(7, call), min_graph_calls=4)
    assert not fallback_reasons(jf), jf.explain()


@pytest.mark.parametrize("expr", ["np.einsum(x, [0, 1, 2], [0, 2])", "np.einsum(x[0], [1, 0])",
                                  "np.einsum(x[0], [0, 1], w, [1, 27], [27, 0])", "np.einsum(x, [Ellipsis, 1, 1])",
                                  "np.einsum(x, [0, 1, 1], w, [1, 2])"])
def test_einsum_in_the_sublist_form(tmp_path, expr):
    """`np.einsum(x, [0, 1], y, [1, 2], [0, 2])` (it recursed until Python's limit, an internal
    error): NumPy's letters for the axis numbers, an implicit output in NumPy's order."""
    module = load_module(tmp_path, f"import numpy as np\n\ndef f(x, w):\n    return {expr}\n")

    def call(s, i):
        return random_array(i, (2, 3, 3)), random_array(i + 9, (3, 4))

    jf = check(lambda: (module.f, {}), call_sequence(6, call), min_graph_calls=3)
    assert not fallback_reasons(jf), jf.explain()


@pytest.mark.parametrize("expr", ["x.take(idx, axis=1)", "np.take(x, idx, axis=-1)", "np.take(x, idx2, axis=1)",
                                  "x.take(idx, axis=0)"])
def test_take_along_a_later_axis_is_c_ordered(tmp_path, expr):
    """np.take's result is C-ordered; `x[:, idx]`, which the graph made it, is not (a caller's
    `np.ascontiguousarray(r)` or `r.ravel()` then copied under jit only)."""
    import janus_like as jl

    module = load_module(tmp_path, f"import numpy as np\n\ndef f(x, idx, idx2):\n    return {expr}\n")
    jf = jl.jit(module.f, choose="graph")
    for i in range(6):
        args = (random_array(i, (4, 5)), np.array([0, 2, 1]), np.array([[0, 1], [3, 4]]))
        got, want = jf(*args), module.f(*args)
        np.testing.assert_array_equal(got, want)
        assert (got.flags.c_contiguous, got.flags.f_contiguous) == (want.flags.c_contiguous, want.flags.f_contiguous)
    assert jf.stats()["graph_calls"] >= 2, jf.explain()


def test_sorted_keys_of_a_parameter_dict():
    """`for k in sorted(params)` (and `max(d)`, `min(d)`): Python takes the dict's keys, which
    the guards read (the values were taken, and the step stayed eager); a key added on call 5
    is another graph."""
    def step(x, st):
        tot = 0.0
        for k in sorted(st["params"]):
            st["params"][k] -= 0.1 * x
            tot += float(st["params"][k].sum())
        return tot, max(st["params"]), min(st["params"]), sorted(st["params"], reverse=True)

    def call(s, i):
        if i == 5:
            s["params"]["a0"] = np.ones(2)
        return np.full(2, 0.1 * i), s

    make = lambda: (step, {"params": {"w2": np.ones(2), "w1": np.ones(2) * 2, "b": np.zeros(2)}})  # noqa: E731
    jf = check(make, call_sequence(9, call), min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


@pytest.mark.parametrize("expr", ["str(st['buf'])", "repr(st['counts'])", "f\"{st['d']}\"", "print(st['buf'])",
                                  "print(st['d'], st['counts'])"])
def test_text_of_deques_and_dict_subclasses_is_their_classes(tmp_path, expr):
    """`str(buf)` of a deque, `print(d)` of a defaultdict or a Counter: the graph formatted the
    list or dict it reads them as (`[1.0, 2.0]` for `deque([1.0, 2.0], maxlen=3)`), and a print
    after an append showed the deque from before it. Their text keeps the step eager."""
    import collections

    module = load_module(tmp_path, "import numpy as np\n\ndef f(x, st):\n    st['buf'].append(float(x[0]))\n"
                                   f"    st['w'] = st['w'] + x\n    return {expr}\n")

    def make():
        return module.f, {"w": np.ones(2), "buf": collections.deque([1.0, 2.0], maxlen=3),
                          "d": collections.defaultdict(float, a=1.0), "counts": collections.Counter(a=2)}

    check(make, call_sequence(6, lambda s, i: (np.full(2, 0.1 * i), s)), min_graph_calls=0)
