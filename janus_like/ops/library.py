"""NumPy's own functions as graph nodes: pure functions with no op of their own whose result's
shape and type follow from their operands' shapes and types and their constant arguments
(`np.median(losses)`, `np.percentile(g, 99)`, `np.allclose(w, w_prev)`, `np.isclose(a, b)`,
`np.nanmean(x)`, `np.linalg.det(A)`, `np.linalg.svd(A)`, `np.histogram(x, 10)`; ufuncs without an
op, `np.fmax(a, b)`, `np.modf(x)`, are called the same way). The node calls the NumPy function
itself on the run's values, so the value, its Python type (a Python bool, a NumPy scalar, an
array, a tuple of them) and its warnings are eager's. It has no gradient rule, as eagerly (a
Tensor's NumPy function without an op is a constant there).

`LIBRARY_FUNCTIONS` maps each function to the parameters that may hold values the graph
computes; the others must be constants (they set the result's shape: `np.repeat`'s counts,
`np.delete`'s indices, `np.partition`'s kth). Functions that return a view of an argument or
the argument itself (`np.ascontiguousarray`, `np.diag` of a matrix), write into an argument
(`out=`, `overwrite_input=True`, `np.nan_to_num(copy=False)`), make a result whose shape
depends on the data (`np.unique`, `np.nonzero`: selections in graphgen/masks.py;
`np.linalg.lstsq`'s residuals) or whose dtype does (`np.linalg.eig`: complex only where an eigenvalue is) are not here.
"""
from __future__ import annotations

import sys

import numpy as np

from .draws import fill
from .registry import register

_A = frozenset(("a",))
_AB = frozenset(("a", "b", "rtol", "atol"))
_LINALG = {getattr(np.linalg, name): frozenset((param,)) for name, param in (
    ("det", "a"), ("cholesky", "a"), ("eigvalsh", "a"), ("pinv", "a"), ("matrix_rank", "A"), ("cond", "x"),
    ("svd", "a"), ("eigh", "a"), ("qr", "a"), ("slogdet", "a"), ("matrix_power", "a"), ("multi_dot", "arrays"))}

LIBRARY_FUNCTIONS = {
    np.isclose: _AB, np.allclose: _AB,
    np.array_equal: frozenset(("a1", "a2")), np.array_equiv: frozenset(("a1", "a2")),
    np.median: _A, np.nanmedian: _A,
    np.percentile: frozenset(("a", "q")), np.quantile: frozenset(("a", "q")),
    np.nanpercentile: frozenset(("a", "q")), np.nanquantile: frozenset(("a", "q")),
    np.nanmean: _A, np.nansum: _A, np.nanprod: _A, np.nanmax: _A, np.nanmin: _A, np.nanstd: _A, np.nanvar: _A,
    np.nanargmax: _A, np.nanargmin: _A, np.nancumsum: _A, np.nancumprod: _A,
    np.cumprod: _A, np.ptp: _A, np.average: frozenset(("a", "weights")), np.count_nonzero: _A,
    np.searchsorted: frozenset(("a", "v")), np.digitize: frozenset(("x", "bins")),
    np.interp: frozenset(("x", "xp", "fp", "left", "right")), np.trace: _A,
    np.cross: frozenset(("a", "b")), np.kron: frozenset(("a", "b")), np.inner: frozenset(("a", "b")),
    np.cov: frozenset(("m", "y", "fweights", "aweights")), np.corrcoef: frozenset(("x", "y")),
    np.partition: _A, np.argpartition: _A, np.convolve: frozenset(("a", "v")),
    np.correlate: frozenset(("a", "v")), np.polyval: frozenset(("p", "x")),
    np.append: frozenset(("arr", "values")), np.delete: frozenset(("arr",)),
    np.insert: frozenset(("arr", "values")), np.repeat: _A, np.resize: _A,
    np.take_along_axis: frozenset(("arr", "indices")), np.compress: _A, np.choose: frozenset(("a", "choices")),
    # a tuple of values (one item node each, graphgen/numpy_calls.library_node)
    np.histogram: frozenset(("a", "range", "weights")), np.meshgrid: frozenset(("xi",)),
    np.unravel_index: frozenset(("indices",)), np.gradient: frozenset(("f", "varargs")),
    np.polyfit: frozenset(("x", "y", "w")),
    np.diagflat: frozenset(("v",)),
    np.select: frozenset(("condlist", "choicelist", "default")), np.vdot: frozenset(("a", "b")),
    np.column_stack: frozenset(("tup",)), np.angle: frozenset(("z",)), np.lexsort: frozenset(("keys",)),
    **_LINALG,
}
# the discrete Fourier transforms (a complex result; `.real`/`.imag` are views, ops/memory.py)
LIBRARY_FUNCTIONS.update({getattr(np.fft, name): _A for name in (
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn",
    "irfftn")})
LIBRARY_FUNCTIONS.update({np.fft.fftshift: frozenset(("x",)), np.fft.ifftshift: frozenset(("x",))})
if hasattr(np, "trapezoid"):  # NumPy 2's name for trapz
    LIBRARY_FUNCTIONS[np.trapezoid] = frozenset(("y", "x"))

# pure functions of optional libraries, by module and name: the parameters graph values may fill
# (SciPy is not a dependency: matched on the functions the user's code calls, `library_operands`)
_OPTIONAL = {("scipy.special", "logsumexp"): frozenset(("a", "b")),
             ("scipy.special", "softmax"): frozenset(("x",)), ("scipy.special", "log_softmax"): frozenset(("x",))}


def library_operands(func):
    """LIBRARY_FUNCTIONS' entry for func, also for the optional libraries' functions in
    `_OPTIONAL` (`scipy.special.logsumexp`), or None."""
    found = LIBRARY_FUNCTIONS.get(func)
    if found is not None:
        return found
    module = getattr(func, "__module__", None) or ""
    if module.startswith("scipy."):
        for (public, name), operands in _OPTIONAL.items():
            if getattr(func, "__name__", None) == name and getattr(sys.modules.get(public), name, None) is func:
                return operands
    return None


# arguments that make the function write into an operand: such calls stay eager
# (or, `copy=False` of np.meshgrid, give views of one)
WRITES = {"out": lambda v: v is not None, "overwrite_input": bool, "copy": lambda v: not v}


def _call(xp, *values, fn, args, kwargs):
    return fn(*fill(args, values), **{k: fill(v, values) for k, v in kwargs.items()})


register("numpy_call", _call, raises=True,
         doc="NumPy function `fn` called with `args`/`kwargs`, each Hole in them filled with the node's inputs in "
             "order (`np.median(x)`, `np.percentile(g, 99)`): its result as NumPy gives it, no gradient")
