"""Share im2col between a convolution and its weight gradient.

A training step computes `conv2d(x, w)` forward and `conv2d_grad_weight(g, x, w)` backward; both
lay out the same im2col matrix of x (a copy of kh*kw times the input). When both are in the
graph, one `im2col(x)` node is made before the first of them and each is rewritten onto it:

    conv2d(x, w)                 -> conv2d_cols(im2col(x), w, x)
    conv2d_grad_weight(g, x, w)  -> conv2d_grad_weight_cols(g, im2col(x), w)

The kernels are the ones conv2d and its gradient call themselves (`ops/conv.py`), so results
are bit for bit the same; the matrix lives from the forward pass to the backward pass.
Top-level nodes only (a conditional's branch may not run).
"""
from __future__ import annotations

from .. import ir
from ..ops.conv import out_size


def _operands(n):
    if n.op == "conv2d" and len(n.inputs) == 2:
        return n.inputs[0], n.inputs[1]
    if n.op == "conv2d_grad_weight":
        return n.inputs[1], n.inputs[2]
    return None


def share_im2col(graph: ir.Graph) -> ir.Graph:
    groups: dict = {}
    for n in graph.nodes:
        xw = _operands(n)
        if xw is None or not all(isinstance(v, ir.Node) and v.aval is not None for v in xw):
            continue
        x, w = xw
        key = (x.id, tuple(w.aval[0][2:]), tuple(n.params["stride"]), tuple(n.params["padding"]))
        groups.setdefault(key, []).append(n)
    for (_, size, stride, padding), users in groups.items():
        if len(users) < 2 or not any(u.op == "conv2d_grad_weight" for u in users):
            continue
        x = _operands(users[0])[0]
        n, c, h, wd = x.aval[0]
        (kh, kw), (oh, ow) = size, out_size(h, wd, size, stride, padding)
        cols = ir.Node("im2col", (x,), {"size": size, "stride": stride, "padding": padding},
                       ((c * kh * kw, oh * ow * n), x.aval[1]), users[0].site)
        graph.nodes.insert(graph.nodes.index(users[0]), cols)
        for u in users:  # rewritten in place: every user of u keeps reading u
            if u.op == "conv2d":
                u.op, u.inputs = "conv2d_cols", (cols, u.inputs[1], x)
            else:
                u.op, u.inputs, u.params = "conv2d_grad_weight_cols", (u.inputs[0], cols, u.inputs[2]), {}
    return graph
