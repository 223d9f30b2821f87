"""The gradient checker and value generators used by the gradient tests.

`check_grads(fn, *args)` compares the GradientTape gradient of <fn(*args), u> (u a fixed random
projection) with central finite differences in float64; `order=2` checks the gradient function.
"""
from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import janus_like as jl
from janus_like import F



# ------------------------------------------------------------------ the checker
def _is_float_array(a):
    return isinstance(a, (np.ndarray, np.floating)) and np.asarray(a).dtype.kind == "f"


def _leaves(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _projections(fn, args, seed):
    outs = _leaves(fn(*[jl.tensor(a) if _is_float_array(a) else a for a in args]))
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs]


def _project(out, us):
    """<out, u> as a scalar tensor, built from ops so the tape records it."""
    total = None
    for o, u in zip(_leaves(out), us):
        term = F.sum(F.mul(o, u))
        total = term if total is None else F.add(total, term)
    return total


def watched_grads(fn, args, us, watched):
    """Gradients of <fn(*args), u> with respect to args[i] for i in `watched`; the other float
    arguments are tensors the tape does not watch."""
    ts = [jl.tensor(np.asarray(a)) if _is_float_array(a) else a for a in args]
    with jl.GradientTape() as tape:
        tape.watch([ts[i] for i in watched])
        loss = _project(fn(*ts), us)
    return tape.gradient(loss, [ts[i] for i in watched], unconnected_gradients="zero")


def analytic_grads(fn, args, us):
    wrt = [i for i, a in enumerate(args) if _is_float_array(a)]
    ts = [jl.tensor(np.asarray(a)) if i in wrt else a for i, a in enumerate(args)]
    with jl.GradientTape() as tape:
        tape.watch([ts[i] for i in wrt])
        loss = _project(fn(*ts), us)
    grads = tape.gradient(loss, [ts[i] for i in wrt], unconnected_gradients="zero")
    return wrt, grads


def numeric_grads(fn, args, us, wrt, eps):
    def value(arrays):
        out = fn(*[jl.tensor(a.copy()) if i in wrt else a for i, a in enumerate(arrays)])
        return math.fsum(float(np.sum(np.asarray(o, dtype=np.float64) * u)) for o, u in zip(_leaves(out), us))

    arrays = [np.array(a, dtype=np.float64) if i in wrt else a for i, a in enumerate(args)]
    grads = []
    for i in wrt:
        x = arrays[i]
        g = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            old = x[k]
            x[k] = old + eps
            up = value(arrays)
            x[k] = old - eps
            down = value(arrays)
            x[k] = old
            g[k] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def _grad_fn(fn, args, seed):
    """The function args -> d<fn(args), u>/d(float args), itself differentiable on an outer tape."""
    us = _projections(fn, args, seed)
    wrt = [i for i, a in enumerate(args) if _is_float_array(a)]

    def gradient_of_fn(*ts):
        with jl.GradientTape() as tape:
            tape.watch([ts[i] for i in wrt])
            loss = _project(fn(*ts), us)
        return tuple(tape.gradient(loss, [ts[i] for i in wrt], unconnected_gradients="zero"))

    return gradient_of_fn


def check_grads(fn, *args, order=1, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Assert that GradientTape's gradient of fn matches central finite differences.

    Float ndarray arguments are wrapped as tensors and differentiated; every other argument is
    passed to `fn` unchanged. `fn` returns a tensor or a tuple of tensors. `order=2` checks the
    gradient function itself (the vjp of every vjp rule involved) the same way.
    """
    if order > 1:
        return check_grads(_grad_fn(fn, args, seed + order), *args, order=order - 1,
                           eps=eps, rtol=rtol, atol=atol, seed=seed)
    us = _projections(fn, args, seed)
    wrt, analytic = analytic_grads(fn, args, us)
    numeric = numeric_grads(fn, args, us, wrt, eps)
    for i, a, n in zip(wrt, analytic, numeric):
        assert isinstance(a, jl.Tensor), f"gradient of argument {i} is {type(a).__name__}"
        assert a.shape == np.shape(args[i]), f"gradient of argument {i}: shape {a.shape} != {np.shape(args[i])}"
        assert a.dtype == np.asarray(args[i]).dtype, f"gradient of argument {i}: dtype {a.dtype}"
        np.testing.assert_allclose(a.numpy(), n, rtol=rtol, atol=atol, err_msg=f"gradient of argument {i}")


def assert_variable_gradients(variables, grads, loss, eps=1e-6, atol=1e-6):
    """Each gradient against central differences of `loss()` in each element of its Variable
    (each Variable bumped in place, then put back)."""
    for var, g in zip(variables, grads):
        base = var.numpy().copy()
        numeric = np.zeros_like(base)
        for index in np.ndindex(base.shape):
            for sign in (1.0, -1.0):
                bumped = base.copy()
                bumped[index] += sign * eps
                var.assign(bumped)
                numeric[index] += sign * float(loss()) / (2 * eps)
        var.assign(base)
        np.testing.assert_allclose(g.numpy() if isinstance(g, jl.Tensor) else g, numeric, rtol=1e-5, atol=atol,
                                   err_msg=var.name)


# ------------------------------------------------------------------ value generators
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
ND_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def _arr(x):
    return np.asarray(x, dtype=np.float64)


def normal(rng, shape, scale=1.0):
    return _arr(rng.standard_normal(shape) * scale)


def positive(rng, shape, lo=0.5, hi=2.0):
    return _arr(rng.uniform(lo, hi, shape))


def away_from_zero(rng, shape, lo=0.3, hi=2.0):
    return _arr(rng.uniform(lo, hi, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0))


def distinct(rng, shape):
    """Values pairwise at least 0.08 apart, so max/min/argmax have no ties within eps."""
    n = int(np.prod(shape, dtype=np.int64))
    vals = rng.permutation(n) * 0.1 + rng.uniform(0, 0.02, n) - n * 0.05
    return _arr(vals.reshape(shape))


def interleaved(rng, shape, offset):
    """Values whose position modulo 2 lies in [offset, offset + 0.4]: two calls with offsets 0 and 1
    never come within 0.6 of each other, so maximum/minimum never see near-ties."""
    return _arr(rng.uniform(offset, offset + 0.4, shape) + 2 * rng.integers(-1, 2, shape))


def broadcast_shapes(draw, n=2):
    return draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, min_side=1,
                                                  max_side=4)).input_shapes


def axis_for(draw, nd):
    """None, an int (possibly negative) or a tuple of distinct axes, valid for nd dims."""
    kind = draw(st.sampled_from(["none", "int", "tuple"])) if nd else "none"
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
    return tuple(a - nd if draw(st.booleans()) else a for a in axes)


