"""`try` statements and `super()` in jitted code, side by side with eager.

A `try` runs as a graph as if its body raises nothing; when a graph op raises at run time, the
call falls back and eager's handler runs. Handlers that caught something each time the warm-up
entered the `try` keep the signature eager (`try`); one that caught only sometimes (a cache filled
on its first miss) is no bar. `finally` runs after the body, also when the
body returns or breaks. A `with contextlib.suppress(...)` block is such a `try`. `super()` in an inlined method looks the attribute up after the method's
class in the object's MRO (`graphgen/calls.py`, `super_ref`)."""
import contextlib

import numpy as np

import janus_like as jl
from janus_like import F

from .harness import assumption_kinds, check, fallback_reasons


class Log:
    def __init__(self):
        self.closed = 0
        self.total = np.zeros(3)


def _calls(n, bad=()):
    """x, an index array (out of range at the calls in `bad`), the log object."""
    def call(state, k):
        idx = np.array([0, 2, 7 if k in bad else 1])
        return np.random.default_rng(k).standard_normal((3, 3)), idx, state["log"]

    return [lambda s, k=k: call(s, k) for k in range(n)]


def _make(f):
    return lambda: (f, {"log": Log()})


def guarded_gather(x, idx, log):
    try:
        y = x[idx] * 2.0
    except IndexError:
        y = x * 0.0
    else:
        log.total = log.total + y.sum(axis=0)
    finally:
        log.closed += 1
    return y


def test_a_handler_never_entered_runs_as_a_graph():
    jf = check(_make(guarded_gather), _calls(8), min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()  # (the counter's value, then an input)


def test_a_graph_op_raising_at_run_time_falls_back_to_eagers_handler():
    """Once: that call runs eagerly and the graphs stay; twice (regen_after): the signature goes
    eager."""
    jf = check(_make(guarded_gather), _calls(12, bad={6}), min_graph_calls=7)
    assert "try" in fallback_reasons(jf) and "internal-error" not in fallback_reasons(jf), jf.explain()
    assert jf.graphs(), jf.explain()
    jf = check(_make(guarded_gather), _calls(12, bad={6, 8}), min_graph_calls=2)
    assert not jf.graphs() and jf.stats()["eager_calls"] >= 3, jf.explain()


def test_a_handler_that_caught_at_each_warm_up_call_stays_eager():
    jf = check(_make(guarded_gather), _calls(7, bad={0, 1, 2}), min_graph_calls=0)
    assert fallback_reasons(jf) == {"try"} and not jf.graphs(), jf.explain()
    assert "3 of 3" in jf.explain(), jf.explain()


def test_a_handler_that_caught_once_in_the_warm_up_is_no_bar():
    jf = check(_make(guarded_gather), _calls(9, bad={1}), min_graph_calls=5)
    assert "try" not in fallback_reasons(jf), jf.explain()


def suppressed_gather(x, idx, log):
    y = x * 0.0
    with contextlib.suppress(KeyError, IndexError):  # a `try` whose handler passes
        y = x[idx] * 2.0
        log.total = log.total + y.sum(axis=0)
    log.closed += 1
    return y


def test_a_suppress_block_runs_as_a_graph_and_falls_back_to_eagers_suppress():
    """As a `try`: no error, a graph; an error at run time at call 6 (eager swallows it, with
    the effects before it), that call eager and the graphs stay; at calls 6 and 8 the signature
    goes eager."""
    jf = check(_make(suppressed_gather), _calls(8), min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()
    jf = check(_make(suppressed_gather), _calls(12, bad={6}), min_graph_calls=7)
    assert "try" in fallback_reasons(jf) and "internal-error" not in fallback_reasons(jf), jf.explain()
    assert jf.graphs(), jf.explain()
    jf = check(_make(suppressed_gather), _calls(12, bad={6, 8}), min_graph_calls=2)
    assert not jf.graphs() and jf.stats()["eager_calls"] >= 3, jf.explain()


def optional_bonus(x, idx, log, cfg):
    y = x[idx]
    with contextlib.suppress(KeyError):
        y = y + cfg["bonus"]  # a missing key raises while generating: eager swallows it
    return y


def test_an_error_a_suppress_swallows_while_generating_runs_that_call_eagerly():
    calls = [lambda s, k=k: _calls(k + 1)[k](s) + ({"bonus": 1.0} if k % 3 else {},) for k in range(9)]
    jf = check(_make(optional_bonus), calls, min_graph_calls=2)
    assert "try" in fallback_reasons(jf), jf.explain()


class Optimizer:
    def __init__(self):
        self.state = {}
        self.w = np.random.default_rng(3).standard_normal((3, 3))


def momentum_step(x, names, opt):
    """Per-name momentum buffers created on their first use (`except KeyError`), in a loop."""
    total = 0.0
    for name in names:
        try:
            buf = opt.state[name]
        except KeyError:
            buf = np.zeros((3, 3))
            opt.state[name] = buf
        g = x.T @ np.tanh(x @ opt.w)
        buf = 0.9 * buf + g
        opt.state[name] = buf
        opt.w = opt.w - 0.01 * buf
        total = total + float(np.sum(buf))
    return total


def test_buffers_created_on_their_first_miss_run_as_graphs():
    """A second name appears at call 1 (caught in the warm-up, 2 of 5 entries), a third at call
    6 (the graphs' key guards fail; generating that call's body raises KeyError: that call runs
    eagerly, the next generates again) and the state is emptied at call 9."""
    def make():
        return momentum_step, {"opt": Optimizer()}

    def call(state, k):
        if k == 9:
            state["opt"].state.clear()
        names = ("a",) if k == 0 else ("a", "b") if k < 6 else ("a", "b", "c")
        return np.random.default_rng(k).standard_normal((4, 3)), names, state["opt"]

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(14)], min_graph_calls=6)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def early_return(x, idx, log):
    for k in range(3):
        try:
            if k == 1:
                return x * k
            log.total = log.total + x[k]
        finally:
            log.closed += 10 + k
    return x


def test_finally_runs_when_the_body_returns():
    check(_make(early_return), _calls(9), min_graph_calls=3)


class Layer:
    def __init__(self):
        self.w = np.random.default_rng(1).standard_normal((3, 3)) * 0.5
        self.calls = 0

    @property
    def gain(self):
        return 2.0

    def forward(self, x):
        self.calls += 1
        return x @ self.w


class Tanh(Layer):
    def forward(self, x):
        return np.tanh(super().forward(x)) * self.gain


class Scaled(Tanh):
    @property
    def gain(self):
        return super().gain * 0.5

    def forward(self, x):
        return super(Tanh, self).forward(x) + super().forward(x)  # Layer's, then Tanh's


def test_super_calls_run_as_graphs():
    def make():
        return (lambda x, layer: layer.forward(x)), {"layer": Scaled()}

    calls = [lambda s, k=k: (np.random.default_rng(k).standard_normal((2 + k // 4, 3)), s["layer"]) for k in range(8)]
    jf = check(make, calls, min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


def lookup(x, idx, log, table):
    try:
        w = table["w"]
    except KeyError:
        w = np.eye(3)
    return x @ w


def test_an_exception_the_users_code_raises_while_generating_is_eagers_to_catch():
    """The table loses its key after the warm-up: generating the body raises KeyError, which the
    handler catches in eager. The key's absence is guarded, so the new graph takes the handler
    (before, the signature stayed eager with the `try` reason); never an internal error."""
    def make():
        return lookup, {"log": Log(), "table": {"w": np.ones((3, 3))}}

    def call(state, k):
        if k == 4:
            state["table"].pop("w")
        return np.random.default_rng(k).standard_normal((3, 3)), np.arange(3), state["log"], state["table"]

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(8)], min_graph_calls=5)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()
    assert "contains" in assumption_kinds(jf), jf.explain()


def optional_aux(st, x):
    """An optional entry of the state, absent on every call: `except KeyError` always runs."""
    h = np.tanh(x @ st["w"])
    try:
        aux = float(np.abs(h @ st["aux"]).mean())
    except KeyError as e:
        aux = len(str(e))
    else:
        aux += 1.0
    finally:
        st["calls"] += 1
    st["w"] -= 0.1 * h.mean()
    return h.sum() + aux


def test_a_handler_taken_on_every_call_runs_in_the_graph_when_guards_decide_it():
    """The warm-up's handler caught a KeyError every time (the key is missing from the state's
    dict): the graph takes the handler, with the key's absence guarded (it was eager). A call
    where the key is back fails that guard; the body no longer raises, but the profile says it
    raised every time, so the signature's new calls run eagerly (where a graph op would raise)."""
    def make():
        return optional_aux, {"w": np.eye(3) * 0.5, "calls": 0}

    def call(state, k):
        if k == 8:
            state["aux"] = np.ones(3)
        return state, np.random.default_rng(k).standard_normal((2, 3))

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(12)], min_graph_calls=5)
    assert "contains" in assumption_kinds(jf), jf.explain()


def handler_inside_branch(st, x):
    try:
        if x.sum() > 0:  # a conditional node: which branch raises is the data's to decide
            v = st["missing"]
        else:
            v = 1.0
    except KeyError:
        v = 2.0
    return x * v


def test_a_lookup_that_fails_inside_a_data_dependent_branch_stays_eagers():
    calls = [lambda s, k=k: (s, np.random.default_rng(k).standard_normal(3)) for k in range(8)]
    jf = check(lambda: (handler_inside_branch, {}), calls, min_graph_calls=0)
    assert jf.stats()["graph_calls"] == 0, jf.explain()


def test_a_module_subclass_calling_super_forward_trains_side_by_side():
    import janus_like as jl
    from janus_like import F, nn, optim

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(4, 8), nn.Linear(8, 2)

        def forward(self, x):
            return self.l2(F.relu(self.l1(x)))

    class Scaled(Net):
        def forward(self, x):
            return super().forward(x) * 0.5

    def train(x, y, m, opt):
        with jl.GradientTape() as tape:
            loss = F.cross_entropy(m(x), y)
        params = m.parameters()
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    def make():
        np.random.seed(0)  # the layers' initial weights
        return train, {"m": Scaled(), "opt": optim.Adam(0.01)}

    def call(state, k):
        r = np.random.default_rng(k)
        n = 5 if k < 5 else 3
        return r.standard_normal((n, 4)), r.integers(0, 2, n), state["m"], state["opt"]

    jf = check(make, [lambda s, k=k: call(s, k) for k in range(8)], min_graph_calls=4)
    assert fallback_reasons(jf) <= {"assumption"}, jf.explain()


# ------------------------------------------------------------------ state created on first use

class LazyAdam:
    def __init__(self, lr=0.01):
        self.lr, self.b1, self.b2 = lr, 0.9, 0.999
        self.m, self.v = {}, {}
        self.t = 0
    def update(self, name, var, g):
        try:
            m, v = self.m[name], self.v[name]
        except KeyError:
            m = v = np.zeros(var.shape, np.float32)
        m = self.b1 * m + (1 - self.b1) * g
        v = self.b2 * v + (1 - self.b2) * g * g
        self.m[name], self.v[name] = m, v
        var.assign_sub(self.lr * m / (np.sqrt(v) + 1e-8))

class TwoLayers:
    def __init__(self):
        r = np.random.default_rng(0)
        self.w1 = jl.Variable((r.standard_normal((6, 8)) * 0.3).astype(np.float32))
        self.w2 = jl.Variable((r.standard_normal((8, 3)) * 0.3).astype(np.float32))

def lazy_state_step(model, opt, stats, x, y):
    with jl.GradientTape() as tape:
        loss = F.cross_entropy(np.tanh(x @ model.w1) @ model.w2, y)
    g1, g2 = tape.gradient(loss, [model.w1, model.w2])
    opt.t += 1
    opt.update("w1", model.w1, g1)
    opt.update("w2", model.w2, g2)
    try:
        stats.ema = 0.9 * stats.ema + 0.1 * loss
    except AttributeError:
        stats.ema = loss
    try:
        stats.best["loss"] = min(stats.best["loss"], float(loss))
    except KeyError:
        stats.best["loss"] = float(loss)
    return loss

class RunningStats:
    def __init__(self):
        self.best = {}

def _make_lazy():
    return lazy_state_step, {"model": TwoLayers(), "opt": LazyAdam(), "stats": RunningStats()}

def _lazy_call(s, k):
    r = np.random.default_rng(k)
    if k == 9:
        s["opt"].m.clear(); s["opt"].v.clear()  # a reset: moments made again
    if k == 13:
        del s["stats"].ema
    return s["model"], s["opt"], s["stats"], r.standard_normal((5, 6)).astype(np.float32), r.integers(0, 3, 5)


def test_state_created_on_first_use_through_handlers():
    """An Adam-like optimizer making its moments on a KeyError, an EMA attribute made on an
    AttributeError, a best-loss entry in a dict: each handler caught in the warm-up, and again
    after a reset (call 9) and a deleted attribute (call 13)."""
    jf = check(_make_lazy, [lambda s, k=k: _lazy_call(s, k) for k in range(20)], min_graph_calls=12)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def inner_finally(st, x):
    try:
        try:
            v = st["missing"]
        finally:
            st["fin"] += 1  # eager's runs on the way to the outer handler
    except KeyError:
        v = 0.5
    return x * v


class Entered:
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, et, ev, tb):
        self.log.append("exit" if et is None else "exit-" + et.__name__)


def inside_with(st, x):
    try:
        with st["ctx"]:
            v = st["missing"]
    except KeyError:
        v = 0.5
    return x * v


def kept_error(st, x):
    try:
        aux = st["missing"]
    except KeyError as e:
        st["errs"].append(e)  # eager's is a new KeyError each call
        aux = 0.0
    return x + aux


def test_a_raise_the_guards_decide_on_its_way_through_finally_and_with():
    """A missing key the guards decide raises inside an inner `try/finally` or a `with` of an
    object of the user's, and an outer handler catches it: the inner `finally` runs in the graph
    as in eager (it was skipped), and `__exit__`, which eager calls with the exception, keeps
    the call eager (it was never called). The exception object a handler keeps is eager's."""
    calls = [lambda s, k=k: (s, np.random.default_rng(k).standard_normal(3)) for k in range(8)]
    jf = check(lambda: (inner_finally, {"fin": 0}), calls, min_graph_calls=4)
    assert "contains" in assumption_kinds(jf), jf.explain()
    check(lambda: (inside_with, {"ctx": Entered()}), calls, min_graph_calls=0)
    check(lambda: (kept_error, {"errs": []}), calls, min_graph_calls=0)
