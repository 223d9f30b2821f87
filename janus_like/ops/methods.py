"""NumPy-style methods shared by `Tensor` and the graph generator's symbolic values: both spell
`x.sum(axis=1)`, `x.T`, `x.reshape(...)` the same way, through the functional API, so a method
means the same op eagerly and inside a graph."""
from __future__ import annotations

from . import api as F


class ArrayMethods:
    __slots__ = ()

    T = property(lambda self: F.transpose(self))

    def __and__(self, o): return F.logical_and(self, o)
    def __or__(self, o): return F.logical_or(self, o)
    def __invert__(self): return F.logical_not(self)
    def __getitem__(self, index): return F.getitem(self, index)

    # keywords only after `axis`: ndarray's own positional order differs (sum(axis, dtype, out,
    # keepdims)); a positional keepdims would mean another thing to NumPy
    def sum(self, axis=None, *, keepdims=False, dtype=None): return F.sum(self, axis, keepdims, dtype)
    def mean(self, axis=None, *, keepdims=False): return F.mean(self, axis, keepdims)
    def var(self, axis=None, *, ddof=0, keepdims=False): return F.var(self, axis, keepdims, ddof)
    def std(self, axis=None, *, ddof=0, keepdims=False): return F.std(self, axis, keepdims, ddof)
    def any(self, axis=None, *, keepdims=False): return F.any(self, axis, keepdims)
    def all(self, axis=None, *, keepdims=False): return F.all(self, axis, keepdims)
    def max(self, axis=None, *, keepdims=False): return F.max(self, axis, keepdims)
    def min(self, axis=None, *, keepdims=False): return F.min(self, axis, keepdims)
    def argmax(self, axis=None, *, keepdims=False): return F.argmax(self, axis, keepdims)
    def argmin(self, axis=None, *, keepdims=False): return F.argmin(self, axis, keepdims)
    def reshape(self, *shape): return F.reshape(self, shape[0] if len(shape) == 1 else shape)
    def transpose(self, *axes): return F.transpose(self, axes[0] if len(axes) == 1 else (axes or None))
    def swapaxes(self, a, b): return F.swapaxes(self, a, b)
    def squeeze(self, axis=None): return F.squeeze(self, axis)
    def ravel(self): return F.reshape(self, (-1,))

    def flatten(self):  # NumPy's is a copy (ravel's a view where it can be); a Tensor's never changes
        flat = F.reshape(self, (-1,))
        return flat.copy() if getattr(self, "kind", None) == "array" else flat
    def astype(self, dtype, *, copy=True):  # copy=False: an ndarray already of that dtype is itself
        if not copy and getattr(self, "kind", None) == "array" and self.dtype == dtype:
            return self
        return F.cast(self, dtype)
    def round(self, decimals=0): return F.round(self, decimals)
    def cumsum(self, axis=None, dtype=None): return F.cumsum(self, axis, dtype)
    def prod(self, axis=None, *, keepdims=False, dtype=None): return F.prod(self, axis, keepdims, dtype)
    def clip(self, min=None, max=None): return F.clip(self, min, max)  # (NumPy's names: x.clip(min=0))
    def dot(self, o): return F.dot(self, o)
    def exp(self): return F.exp(self)
    def log(self): return F.log(self)
    def tanh(self): return F.tanh(self)
