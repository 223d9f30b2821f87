"""Token lists, Python numbers of changing type and draw sizes, as NLP and RL training steps
use them. Each case was a wrong result or an internal error:

* an input's list inside a list or tuple given to NumPy (`np.array(batch)` of a list of id
  lists, `np.stack([s, s])`, `np.concatenate([ids, [eos]])`) reached NumPy as the generator's
  own objects (an object array of them); `np.outer(ids, [1, 1])` gave a Tensor; `np.add.at(cnt,
  ids, 1)` with `ids` a list kept the first call's ids; `sorted(batch, key=len)` was an internal
  error (it stays eager: its items are the inputs' lists themselves);
* `np.put(bow, ids, 1.0)` into a new array wrote into a copy (the write was lost);
* `max(0, 1 - t * 0.25)` (an int or a float, whichever wins) kept the type the generator saw;
* `rng.integers(0, n, size=bs)` and `np.random.randn(n)` with a size the graph computes had the
  generator's stand-in shape.

Eager and jit side by side after every call."""
import numpy as np
import pytest

from .harness import check, fallback_reasons, numpy_step

SEQS = [[1, 2, 3], [4, 5, 6], [0, 1, 2], [3, 3, 1], [2, 2, 2], [1, 1, 0], [5, 4, 3], [6, 0, 0]]

LISTS = {  # body of step(s, st), with s an input's list of token ids
    "array_of_batch": "batch = [s, s[::-1]]\n    return np.array(batch), np.array([s]).shape",
    "stack": "return np.stack([s, s]), np.column_stack([s, s])",
    "concatenate_eos": "return np.concatenate([s, [9]]), np.hstack([[0], s])",
    "outer": "return np.outer(s, [1, 1]), np.dot(s, [1, 2, 3]), np.outer(np.asarray(s) * 1.0, [1, 2])",
    "add_at_ids": 'np.add.at(st["cnt"], s, 1)\n    return st["cnt"].copy()',
    "add_at_values": 'np.add.at(st["w"], np.array([0, 2, 4]), s)\n    return st["w"].sum()',
    "sorted_by_len": "batch = [s, s[:2], [7]]\n    return [len(b) for b in sorted(batch, key=len)], max(batch, key=len)",
    "put_into_new_array": "bow = np.zeros(7)\n    np.put(bow, s, 1.0)\n    return bow",
}


@pytest.mark.parametrize("name", sorted(LISTS))
def test_input_lists_given_to_numpy_side_by_side(tmp_path, name):
    step = numpy_step(tmp_path, name, "s, st", LISTS[name])

    def make():
        return step, {"cnt": np.zeros(7, dtype=np.int64), "w": np.zeros(7)}

    calls = [lambda st, s=s: (list(s), st) for s in SEQS]
    jf = check(make, calls, min_graph_calls=0 if name in ("put_into_new_array", "sorted_by_len") else 2)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_pad_with_two_constant_values_is_eager_with_a_reason():
    def make():
        def step(s):
            return np.pad(s, (1, 1), constant_values=(0, 9))

        return step, {}

    jf = check(make, [lambda st, s=s: (np.array(s),) for s in SEQS], min_graph_calls=0)
    assert fallback_reasons(jf) == {"unsupported-call"}, jf.explain()


def test_max_of_an_int_and_a_float_keeps_eagers_type():
    def make():
        def step(st):
            st["t"] += 1
            eps = max(0, 1 - st["t"] * 0.25)  # the int 0 once the schedule runs out
            c = max(1, 4 - st["t"] * 0.5)
            st["log"].append(np.array([st["t"], eps]))
            return eps, type(c).__name__, (st["a"] * c).dtype.name

        return step, {"t": 0, "log": [], "a": np.ones(3, np.int8)}

    jf = check(make, [lambda st: (st,)] * 10, min_graph_calls=2)
    assert "pick" in {a.kind for g in jf.compiled for a in g.assumptions}, jf.explain()


DRAWS = {  # body of step(n, st): n an int argument, st["rng"] a Generator
    "integers_sized_by_fill": 'st["size"] += 1\n    bs = min(4, st["size"])\n'
                              '    idx = st["rng"].integers(0, st["size"], size=bs)\n    return st["obs"][idx].mean()',
    "sized_by_argument": 'return st["rng"].standard_normal(n).sum(), st["rng"].uniform(0, 1, size=(n,)).shape',
    "permutation_of_argument": 'return st["obs"][st["rng"].permutation(n)].sum()',
    "global_randn": "return np.random.randn(n).sum(), np.random.normal(0, 1, n).shape",
    "sized_by_computed": 'k = n * 2 - 1\n    return st["rng"].random(k).sum()',
    # an arange of a computed length, shuffled: the shuffle's length was the stand-in's
    "shuffled_arange": 'a = np.arange(n + 2)\n    st["rng"].shuffle(a)\n    return a',
    "arange_of_argument": 'return np.arange(n) * 2.0, st["rng"].permutation(np.arange(n)).shape',
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_draws_sized_by_python_ints_side_by_side(tmp_path, name):
    step = numpy_step(tmp_path, name, "n, st", DRAWS[name])

    def make():
        return step, {"obs": np.arange(20.0), "size": 0, "rng": np.random.default_rng(0)}

    ns = [3, 3, 3, 3, 3, 4, 2, 3, 5, 0, 3]
    staged = name in ("sized_by_argument", "permutation_of_argument", "global_randn",
                      "arange_of_argument")  # (n guarded by value)
    jf = check(make, [lambda st, n=n: (n, st) for n in ns], min_graph_calls=2 if staged else 0)
    assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_a_python_int_outside_int64s_range_is_not_taken_as_an_int64():
    """Once an int argument's value guard is relaxed, the graph holds it as an int64: 2**63 + 7
    (a float64 array in eager's `np.array([1, k])`, 2**64 an object array) runs eagerly."""
    def make():
        def step(k, st):
            return np.array([1, k]).dtype.str, k + 1
        return step, {}

    ks = [2, 2, 2, 2, 3, 5, 2 ** 63, 7, 2 ** 63 + 7, 2 ** 64, -2 ** 63 - 1, 9, -2 ** 63]
    jf = check(make, [lambda st, k=k: (k, st) for k in ks], min_graph_calls=3)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
