"""Lists, dicts and sets that the function built, written inside a branch on a graph value (a
conditional node) or inside a loop whose trip count is a graph value (a loop node). Eager and
jit side by side after every call; the branch outcome and the trip count change mid-sequence.

Both branches are generated one after the other on the same Python containers, so each
branch's writes must be taken out before the next one runs and merged after both
(`graphgen/branch_containers.py`). Before that, the `else` branch's write won and the graph
returned values eager never does (the first tests here failed that way)."""
import numpy as np
from hypothesis import given, settings, strategies as st

from .harness import check, fallback_reasons, load_module


def _has_cond(jf):
    return any(n.op == "cond" for g in jf.compiled for n in g.graph.all_nodes())


def _signed(signs, n=3):
    return [lambda s, sg=sg, i=i: (np.full(n, (1.0 + 0.25 * i) * sg),) for i, sg in enumerate(signs)]


SIGNS = [1, -1, 1, 1, -1, 1, -1, -1, 1, -1]


def test_dict_item_written_in_both_branches_with_values_made_before():
    """The written values exist before the cond: the merge must select, not keep the last."""
    def make():
        def f(x):
            doubled, tripled = x * 2.0, x * 3.0
            out = {"v": x, "tag": 0}
            if x.sum() > 0:
                out["v"] = doubled
            else:
                out["v"] = tripled
            return out["v"] + out["tag"], out

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_list_items_written_in_one_branch_and_updated_in_place():
    def make():
        def f(x):
            hist = [x, x * 0.5]
            if x.max() > 0:
                hist[0] = x + 1.0
                hist[1] = hist[1] + 1.0
            return hist[0] * hist[1], len(hist)

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_append_in_both_branches_and_a_write_through_a_helper():
    """The same length after both branches; the else branch writes through an inlined helper
    that gets the dict as an argument."""
    def put(d, key, value):
        d[key] = value

    def make():
        def f(x):
            trace = []
            stats = {"n": 0.0}
            if x.sum() > 0:
                trace.append(x * 2.0)
                stats["n"] = x.sum()
            else:
                trace.append(-x)
                put(stats, "n", x.min())
            return trace[-1] + stats["n"], len(trace)

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_nested_branches_write_one_dict():
    def make():
        def f(x):
            d = {"level": 0.0, "v": x}
            s = x.sum()
            if s > 0:
                if s > 6:
                    d["level"] = 2.0
                else:
                    d["level"] = 1.0
                d["v"] = d["v"] * d["level"]
            return d["v"], d["level"]

        return f, {}

    jf = check(make, _signed([1, -1, 4, 1, -1, 3, 1, -1, 5, 1, -1]), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


def test_different_lengths_or_keys_fall_back_with_a_reason():
    def make():
        def f(x):
            seen, log = {}, []
            if x.sum() > 0:
                log.append(x)
                seen["pos"] = x
            return x * 2.0, len(log), sorted(seen)

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=0)
    assert "data-dependent-python" in fallback_reasons(jf), jf.explain()
    assert "different lengths" in jf.explain() or "different keys" in jf.explain(), jf.explain()


def test_set_gets_different_elements_falls_back():
    def make():
        def f(x):
            flags = set()
            if x.sum() > 0:
                flags.add("positive")
            else:
                flags.add("negative")
            return x + len(flags), sorted(flags)

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=0)
    assert "different elements" in jf.explain(), jf.explain()


def test_container_written_in_a_loop_node_falls_back():
    """A loop node's body is generated once: a write there would count as one trip. With a
    zero-trip call in the sequence, the old graph returned the value written in the body."""
    def make():
        def f(x):
            best = {"v": x}
            y = x * 2.0
            while x.sum() < 10.0:
                x = x + 1.0
                best["v"] = y
            return best["v"], x

        return f, {}

    starts = [1.0, 5.0, 2.0, 3.0, 4.0, 8.0, 1.0, 20.0, 2.0, 30.0]
    jf = check(make, [lambda s, v=v: (np.full(3, v),) for v in starts], min_graph_calls=0)
    assert "varying-trip-count" in fallback_reasons(jf), jf.explain()
    assert "dict 'best' is written inside a while loop" in jf.explain(), jf.explain()


def test_container_made_inside_the_branch_is_the_branch_own():
    """A list created inside a branch and only read there needs no merge."""
    def make():
        def f(x):
            total = x * 0.0
            if x.sum() > 0:
                parts = [x, x * 2.0]
                parts.append(x * 3.0)
                total = parts[0] + parts[1] + parts[2]
            else:
                total = -x
            return total

        return f, {}

    jf = check(make, _signed(SIGNS), min_graph_calls=4)
    assert _has_cond(jf), jf.explain()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([1, -1]), min_size=5, max_size=12),
       st.sampled_from(["d['a'] = x * {k}", "d['a'] += x", "h[0] = h[0] * {k}", "h.append(x * {k})",
                        "h.reverse()", "h.insert(0, x * {k})"]))
def test_random_writes_and_sign_sequences(tmp_path_factory, signs, write):
    source = f"""
def f(x):
    d = {{'a': x * 0.5}}
    h = [x + 1.0, x - 1.0]
    if x.sum() > 0:
        {write.format(k=2.0)}
    else:
        {write.format(k=3.0)}
    return d['a'] + h[0] + h[-1], len(h)
"""

    directory = tmp_path_factory.mktemp("containers")

    def make():
        return load_module(directory, "import numpy as np\n" + source, "container_prog").f, {}

    check(make, _signed(signs), min_graph_calls=0)
