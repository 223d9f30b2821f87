"""Constructs the rewrite must survive: decorators, methods, static/class methods, super(),
keyword-only arguments and defaults, docstrings, recursion, references taken before hot."""
import functools

import numpy as np

np.random.seed(1)


def logged(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner


@logged
def affine(x, w, b=0.5):
    """Docstring of affine."""
    return x @ w + b


class Base:
    def __init__(self, n):
        self.w = np.random.randn(n, n) * 0.3

    def step(self, x):
        return np.tanh(x @ self.w)


class Child(Base):
    def step(self, x, *, scale=1.0):
        return super().step(x) * scale

    @staticmethod
    def norm(x):
        return np.sqrt(np.sum(x * x))

    @classmethod
    def make(cls, n):
        return cls(n)


def tree_sum(depth, x):
    if depth == 0:
        return x
    return tree_sum(depth - 1, x * 0.9) + tree_sum(depth - 1, x * 1.1)


early = tree_sum  # a reference taken before it is hot
model = Child.make(4)
print(affine.__doc__, affine.__name__, Child.step.__qualname__)
for i in range(8):
    x = np.random.randn(2, 4)
    y = model.step(affine(x, model.w), scale=0.5 + i)
    print(i, "%.12f %.12f %.12f" % (Child.norm(y), early(2, y).sum(), tree_sum(1, x).sum()))
