"""An input written in place, then an object made from it or bound to it that leaves the call:
eager's object shows the writes made before the call returns. A copying reshape of the input
stored twice was built before the commit (it held the values from before the write), and a
name bound to the input inside a staged loop (a break, or a trip count that varies) was the
graph's value of it from before a later write."""
import numpy as np

from tests.jit.harness import check, fallback_reasons


def reshape_twice(b):
    b += 1.0
    t = b.T.reshape(-1)  # b is C-ordered: a copy of b.T, made after the write
    return t, t


def reshape_stored_twice(m, st):
    m[1] += 1.0
    t = m[::-1].reshape(4, 3)
    st["t"] = t
    st["pair"] = [t, t]
    return m.sum()


def reshape_printed(b):
    b += 1.0
    t = b.T.reshape(-1)
    print(t)
    return t, t


def bound_in_loop_with_break(p):
    p *= 0.9
    v = np.zeros(3)
    for j in range(3):
        if j == 1:
            break
        v = p
    p -= 1.0
    return v


def bound_in_varying_loop(p, k):
    p *= 0.9
    v = np.zeros(3)
    for _ in range(k):
        v = p
    p -= 1.0
    return v, p


def test_a_copying_view_of_a_written_input_left_twice_has_the_written_values(capsys):
    check(lambda: (reshape_twice, {}), [lambda s, i=i: (np.arange(6.0).reshape(2, 3) + i,) for i in range(8)],
          min_graph_calls=3)
    check(lambda: (reshape_stored_twice, {}),
          [lambda s, i=i: (np.arange(12.0).reshape(3, 4) + i, s) for i in range(8)], min_graph_calls=3)
    check(lambda: (reshape_printed, {}), [lambda s, i=i: (np.arange(6.0).reshape(2, 3) * i,) for i in range(8)],
          min_graph_calls=3)
    capsys.readouterr()


def test_a_name_a_staged_loop_binds_to_a_written_input_is_that_input():
    jf = check(lambda: (bound_in_loop_with_break, {}), [lambda s, i=i: (np.ones(3) * i,) for i in range(8)],
               min_graph_calls=0)
    assert "internal-error" not in fallback_reasons(jf)
    ks = [2, 2, 2, 2, 3, 0, 3, 1, 2]
    check(lambda: (bound_in_varying_loop, {}), [lambda s, i=i: (np.ones(3) * i, ks[i]) for i in range(len(ks))],
          min_graph_calls=0)


def add_at_then_sum(m):
    np.add.at(m, [0, 1, 1], 0.1)
    return m.sum(), m.sum(axis=0)


def test_an_input_written_by_add_at_keeps_its_layout_for_a_later_reduction():
    """np.add.at into a Fortran-ordered input, then its sum: NumPy sums in memory order, so the
    graph's copy (C-ordered before) gave other last bits."""
    check(lambda: (add_at_then_sum, {}),
          [lambda s, i=i: (np.asfortranarray(np.random.default_rng(i).standard_normal((3, 40))),) for i in range(8)],
          min_graph_calls=3)


def accumulator_bound_in_loop(p, k):
    a = np.zeros(3)
    v = np.ones(3)
    for _ in range(k):
        a += p
        v = a  # eager's v is a itself after a trip
    return v


def made_array_bound_in_loop_written_after(p, k):
    a = np.zeros(3)
    v = np.ones(3)
    for _ in range(k):
        v = a
    a += p  # shows through v after a trip
    return v, a


def window_bound_in_loop(p, k):
    p *= 2
    v = np.zeros(2)
    for j in range(k):
        v = p[j:j + 2]  # a view of p at the trip's j
    p += 1
    return v.sum()


def input_kept_by_zero_trips(p, k):
    a = np.zeros(3)
    v = p
    for _ in range(k):
        v = a
    return v


def np_copy_of_fortran(m):
    d = np.copy(m)
    return d.sum(), d


KS = [2, 2, 2, 2, 3, 0, 3, 1, 2]


def test_names_a_staged_loop_binds_to_arrays_the_step_writes():
    """A loop with a trip count the graph reads (KS varies) leaving a name bound to an array
    written in place in the body, or after the loop, or a view of one: eager's name is that
    array (a stale copy or the array before the loop in the graph: wrong values), or the
    caller's input after zero trips."""
    for step in (accumulator_bound_in_loop, made_array_bound_in_loop_written_after, window_bound_in_loop,
                 input_kept_by_zero_trips):
        jf = check(lambda step=step: (step, {}),
                   [lambda s, i=i: (np.arange(5.0 if step is window_bound_in_loop else 3.0) + i, KS[i])
                    for i in range(len(KS))], min_graph_calls=1)
        assert "internal-error" not in fallback_reasons(jf), jf.explain()


def test_np_copy_keeps_the_layout():
    """np.copy's order is 'K': a Fortran-ordered input's copy is summed in its order (the
    graph's copy was C-ordered: other last bits) and returned Fortran-ordered."""
    jf = check(lambda: (np_copy_of_fortran, {}),
               [lambda s, i=i: (np.asfortranarray(np.random.default_rng(i).standard_normal((3, 40))),)
                for i in range(8)], min_graph_calls=3)
    m = np.asfortranarray(np.ones((3, 4)))
    assert jf(m)[1].flags.f_contiguous


def unused_pool(x, st):
    import janus_like as jl
    from janus_like import F

    with jl.GradientTape() as t:
        h = F.relu(F.conv2d(x, st["w"], padding=(0, 1)))
        loss = F.sum(h * h)
    F.max_pool2d(h, (1, 4))  # computed, never used: raises where the width is under 4
    st["w"].assign_sub(0.01 * t.gradient(loss, st["w"]))
    return loss


def test_an_unused_pooling_that_raises_on_another_size_is_kept():
    """A graph for any width (the width varies on every call): the unused pooling raises at
    width 3, and eager never reaches the weight update (dead-code elimination dropped it)."""
    import janus_like as jl

    widths = [8, 9, 10, 11, 12, 7, 3, 9]
    check(lambda: (unused_pool, {"w": jl.Variable(np.full((3, 2, 1, 3), 0.1, np.float32))}),
          [lambda s, w=w: (np.ones((2, 2, 1, w), np.float32), s) for w in widths], min_graph_calls=2)
