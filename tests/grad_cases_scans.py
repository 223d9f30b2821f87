"""Gradient cases of np.cumsum, np.prod, np.sort, np.triu / np.tril and np.hypot (registered into
grad_cases.CASES when grad_cases is imported). A product's gradient at an exact zero is checked
in tests/test_scans.py (first order only: the rule's second derivative there is not followed)."""
from __future__ import annotations

from hypothesis import strategies as st

from janus_like import F

from gradcheck import ND_SHAPES, away_from_zero, axis_for, distinct, normal
from grad_cases import COVERED_PRIMITIVES, _binary, case

COVERED_PRIMITIVES.update({"cumsum", "prod", "sort", "sort_permute", "triu", "tril", "hypot"})
_binary("hypot", F.hypot, away_from_zero, away_from_zero)


@case("cumsum")
def _(draw, rng):  # along an axis, or over x flattened (None)
    shape = draw(ND_SHAPES)
    axis = draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    return (lambda x: F.cumsum(x, axis)), (normal(rng, shape),)


@case("prod")
def _(draw, rng):  # values away from zero (the rule divides the product by each); keepdims or not
    shape = draw(ND_SHAPES)
    axis, keepdims = axis_for(draw, len(shape)), draw(st.booleans())
    return (lambda x: F.prod(x, axis, keepdims)), (away_from_zero(rng, shape, 0.7, 1.3),)


@case("sort")
def _(draw, rng):  # distinct values: no tie moves under the finite difference
    shape = draw(ND_SHAPES)
    axis = draw(st.sampled_from([None] + list(range(-len(shape), len(shape)))))
    return (lambda x: F.sort(x, axis)), (distinct(rng, shape),)


@case("sort_permute")
def _(draw, rng):  # v in the order a sort of a constant x takes, or put back from it
    shape = draw(ND_SHAPES)
    axis, inverse = draw(st.integers(-len(shape), len(shape) - 1)), draw(st.booleans())
    order = distinct(rng, shape)
    return (lambda v: F.sort_permute(v, order, axis, inverse)), (normal(rng, shape),)


@case("triangles")
def _(draw, rng):  # np.triu / np.tril of a (batch of) matrices, diagonals above and below
    shape = draw(st.sampled_from([(3, 3), (2, 4), (4, 2), (2, 3, 3)]))
    k = draw(st.integers(-2, 2))
    return (lambda x: (F.triu(x, k), F.tril(x, -k))), (normal(rng, shape),)


