"""fold_constants: what every call computes the same way is computed once; nothing that could
be written to, handed out, or warn at run time is folded."""
import numpy as np

from janus_like import ir
from janus_like.passes import fold_constants

from .exact import assert_exact_pass

F32 = np.dtype(np.float32)


def _n(op, *inputs, aval, **params):
    return ir.Node(op, tuple(inputs), params, aval)


def _run(nodes, outputs, slots, polymorphic=False):
    g = ir.Graph("g", list(nodes), list(outputs), 1, polymorphic)
    return assert_exact_pass(g, slots, fold_constants, "folded")


def test_the_backward_seed_chain_folds():
    x = _n(ir.INPUT, aval=((4, 3), F32), slot=0, name="x")
    loss = _n("sum", x, aval=((), F32), axis=None, keepdims=False)
    one = _n("ones_like", loss, aval=((), F32))
    neg = _n("neg", one, aval=((), F32))
    spread = _n("broadcast_like", neg, x, aval=((4, 3), F32))
    out = _n("mul", spread, x, aval=((4, 3), F32))
    g = _run([x, loss, one, neg, spread, out], [out, loss], [np.arange(12, dtype=np.float32).reshape(4, 3)])
    assert spread.op == ir.CONST and [n.op for n in g.nodes].count("neg") == 0


def test_outputs_views_warnings_and_unknown_sizes_are_left_alone():
    x = _n(ir.INPUT, aval=((3,), F32), slot=0, name="x")
    zero = _n(ir.CONST, aval=((3,), F32), value=np.zeros(3, np.float32))
    returned = _n("exp", zero, aval=((3,), F32))  # a graph output: the caller may write to it
    viewed = _n("exp", zero, aval=((3,), F32))
    view = _n("reshape", viewed, aval=((1, 3), F32), shape=(1, 3))  # someone holds a view of it
    warns = _n("log", zero, aval=((3,), F32))  # log(0) warns on every call: stays at run time
    used = _n("add", warns, x, aval=((3,), F32))
    ones = _n("ones_like", x, aval=((3,), F32))
    y = _n("mul", ones, x, aval=((3,), F32))
    nodes = [x, zero, returned, viewed, view, warns, used, ones, y]
    with np.errstate(divide="ignore"):
        _run(nodes, [returned, view, used, y], [np.ones(3, np.float32)])
    assert returned.op == "exp" and viewed.op == "exp" and warns.op == "log" and ones.op == ir.CONST
    ones2 = _n("ones_like", x, aval=((3,), F32))
    y2 = _n("mul", ones2, x, aval=((3,), F32))
    _run([x, ones2, y2], [y2], [np.ones(3, np.float32)], polymorphic=True)  # sizes vary: not a constant
    assert ones2.op == "ones_like"


def test_dead_users_do_not_block_a_fold():
    """`simplify` bypasses identity sum_to's of the backward seed but leaves them in the list
    until DCE: they are no users (the seed chain of every loss made of several terms)."""
    x = _n(ir.INPUT, aval=((3,), F32), slot=0, name="x")
    loss = _n("sum", x, aval=((), F32), axis=None, keepdims=False)
    one = _n("ones_like", loss, aval=((), F32))
    dead = _n("sum_to", one, loss, aval=((), F32))  # nobody reads it any more
    half = _n("mul", one, 0.5, aval=((), F32))
    out = _n("mul", half, x, aval=((3,), F32))
    for polymorphic in (False, True):
        g = _run([x, loss, one, dead, half, out], [out], [np.arange(3, dtype=np.float32)], polymorphic)
        assert half.op == ir.CONST and "sum_to" not in [n.op for n in g.nodes]
