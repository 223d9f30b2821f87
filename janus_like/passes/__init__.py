"""Graph passes: each is a function Graph -> Graph (rewriting in place and returning it).

Input and output: a verified IR graph computing the same values. `PIPELINE` is the order used by
the JIT; passes that reorder floating-point rounding (reassociation) are separate and only run
when the JitFunction was created with `reassociate=True`. With `JANUS_LIKE_VERIFY=1` (set by the
test suite) the verifier runs after every pass.
"""
from __future__ import annotations

import os

from .. import ir
from .batch import batch_matmuls
from .block_reductions import reduce_blocks
from .chains import fold_row_chains
from .constfold import fold_constants, fold_scalar_constants
from .conv_cols import share_im2col
from .cse import cse
from .dce import dce
from .indexed_commits import forward_window_reads
from .fold import fold_accumulations
from .gather import bias_first, gather_rows
from .hoist import hoist_asserts
from .lift import lift_row_blocks
from .onehot import dense_row_sums, sparse_onehot_grads
from .operands import contiguous_operands
from .products import small_products
from .quotient import fold_adam_quotient
from .scale import scale_smaller_operand
from .simplify import simplify, sum_to_reshape, unique_scatters
from .stacks import stack_parts

PIPELINE = [simplify, fold_constants, cse, forward_window_reads, share_im2col, dce, hoist_asserts]
# With reassociation, broadcasts of constants are folded after the row-block passes (see
# fold_scalar_constants): the reassociating pipeline replaces fold_constants by the scalar-only
# fold and folds the rest at its end.
REASSOCIATING = [sum_to_reshape, unique_scatters, fold_accumulations, batch_matmuls, gather_rows, bias_first,
                 lift_row_blocks, reduce_blocks, fold_row_chains, stack_parts, fold_constants, cse, sparse_onehot_grads,
                 dense_row_sums, scale_smaller_operand, fold_adam_quotient, small_products, contiguous_operands, dce, hoist_asserts]


def optimize(graph: ir.Graph, reassociate: bool = False, relaxed=frozenset()) -> ir.Graph:
    """`relaxed`: the JIT's relaxed assumptions for this signature; a rewrite whose assert kept
    failing (`("quotient",)`: Adam's corrections not positive) is left out."""
    from ..executor.placement import any_gpu

    check = os.environ.get("JANUS_LIKE_VERIFY", "") not in ("", "0")
    # On a GPU the rewriting passes (whose rules create NumPy constants and buffers) stay off:
    # CSE and DCE only move and drop nodes, so placement stays what the generator derived.
    if any_gpu(graph):
        passes = [cse, dce, hoist_asserts]
    elif reassociate:
        passes = [fold_scalar_constants if p is fold_constants else p for p in PIPELINE] + REASSOCIATING
    else:
        passes = PIPELINE
    if ("quotient",) in relaxed:
        passes = [p for p in passes if p is not fold_adam_quotient]
    for p in passes:
        graph = p(graph)
        if check:
            ir.verify(graph)
    return graph


__all__ = ["PIPELINE", "REASSOCIATING", "optimize", "batch_matmuls", "cse", "dce", "simplify", "fold_constants",
           "fold_scalar_constants", "share_im2col", "sum_to_reshape", "fold_accumulations",
           "lift_row_blocks", "reduce_blocks", "fold_row_chains", "stack_parts", "gather_rows",
           "bias_first", "sparse_onehot_grads", "dense_row_sums", "scale_smaller_operand",
           "fold_adam_quotient", "small_products", "contiguous_operands", "hoist_asserts",
           "forward_window_reads"]
