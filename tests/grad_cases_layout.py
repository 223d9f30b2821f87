"""Gradient cases of the copies (ndarray.copy, np.copy), np.pad, np.tile, np.roll, np.flip, np.linalg.solve and
np.linalg.inv (registered into grad_cases.CASES when grad_cases is imported)."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from janus_like import F
from janus_like.ops import P, bind

from gradcheck import ND_SHAPES, SHAPES, normal
from grad_cases import case


@case("copy")
def _(draw, rng):
    return (lambda x: bind(P.copy, x)), (normal(rng, draw(SHAPES)),)


@case("copy_keep")
def _(draw, rng):  # np.copy: laid out as x (a Fortran-ordered operand here)
    return (lambda x: bind(P.copy_keep, x)), (np.asfortranarray(normal(rng, draw(SHAPES))),)


@case("pad")
def _(draw, rng):  # zeros around x: one width for all, a pair for all axes, or a pair per axis
    shape = draw(ND_SHAPES)
    width = draw(st.sampled_from([1, (0, 2), tuple((i % 2, 1) for i in range(len(shape)))]))
    return (lambda x: F.pad(x, width)), (normal(rng, shape),)


@case("tile")
def _(draw, rng):  # the gradient of each element is the sum over its copies; reps shorter or longer than x's dims
    shape = draw(ND_SHAPES)
    reps = draw(st.sampled_from([2, (2, 1), (1, 3), (2, 1, 2)]))
    return (lambda x: F.tile(x, reps)), (normal(rng, shape),)


@case("roll")
def _(draw, rng):  # shifts past the length and negative ones wrap; axis None rolls the flat array
    shape = draw(ND_SHAPES)
    nd = len(shape)
    shift, axis = draw(st.sampled_from([(3, None), (-1, 0), (5, -1), ((1, -2), (0, nd - 1)) if nd > 1 else (2, 0)]))
    return (lambda x: F.roll(x, shift, axis)), (normal(rng, shape),)


@case("flip")
def _(draw, rng):
    shape = draw(ND_SHAPES)
    axis = draw(st.sampled_from([None, 0, -1] + ([(0, len(shape) - 1)] if len(shape) > 1 else [])))
    return (lambda x: F.flip(x, axis) * 2.0), (normal(rng, shape),)


@case("solve")
def _(draw, rng):  # a well-conditioned square a; b a vector (NumPy 2), a matrix or a stack
    n = draw(st.integers(1, 4))
    a = normal(rng, (n, n)) * 0.3 + np.eye(n) * 2.0
    b_shape = draw(st.sampled_from([(n,), (n, 2), (3, n, 1)]))
    return (lambda a, b: F.solve(a, b)), (a, normal(rng, b_shape))


@case("inv")
def _(draw, rng):
    n = draw(st.integers(1, 4))
    stack = draw(st.sampled_from([(), (2,)]))
    return (lambda a: F.inv(a)), (normal(rng, stack + (n, n)) * 0.3 + np.eye(n) * 2.0,)
