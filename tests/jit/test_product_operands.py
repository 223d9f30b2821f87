"""Products given one array twice compute otherwise than given two equal arrays: NumPy
multiplies `a @ a.T` by BLAS's syrk, and eager's `(x + 0.0) @ (x + 0.0).T` (two arrays) by gemm,
which rounds otherwise in the last bits. Common-subexpression elimination keeps the operands the
program made apart (passes/cse.py). Each step runs eager and jit side by side.
"""
import numpy as np
import pytest

from .harness import check, load_module

BODIES = {
    "two_sums": "return (x + 0.0) @ (x + 0.0).T",
    "transpose_first": "return (x + 0.0).T @ (x + 0.0)",
    "tanh": "return np.tanh(x) @ np.tanh(x).T",
    "slices": "return (x + 0.0)[:, :8] @ (x + 0.0)[:, :8].T",
    "dot": "return np.dot(x + 1.0, (x + 1.0).T)",
    "inner": "return np.inner(x + 0.0, x + 0.0)",
    "einsum": "return np.einsum('ij,kj->ik', x + 0.0, x + 0.0)",
    "float32": "return (x.astype(np.float32) * 2) @ (x.astype(np.float32) * 2).T",
    "one_array": "a = x + 0.0\n    return a @ a.T",
}


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    source = "import numpy as np\n" + "".join(f"\n\ndef step_{k}(x):\n    {b}\n" for k, b in BODIES.items())
    return load_module(tmp_path_factory.mktemp("products"), source)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_products_of_equal_operands(steps, body):
    rng = np.random.default_rng
    check(lambda: (getattr(steps, f"step_{body}"), {}),
          [lambda s, i=i: (rng(i).standard_normal((14, 36)),) for i in range(6)], min_graph_calls=3)
