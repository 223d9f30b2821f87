"""`jit`'s own options, checked where the user gives them (a bad one failed at the first call,
or was accepted: `warmup="3"`, `max_graphs=0`, `reassociate="no"`)."""
from __future__ import annotations


def check_options(*, warmup, max_graphs, regen_after, mode, reassociate, native, choose):
    """jit's own options, checked where the user gives them (not at the first call)."""
    from ..executor.tiering import resolve_policy
    from .choice import resolve_choice

    resolve_policy(native, True)  # (their own errors, as JitFunction's construction raises them)
    resolve_choice(choose)
    for name, value, least in (("warmup", warmup, 0), ("max_graphs", max_graphs, 1), ("regen_after", regen_after, 1)):
        if type(value) is not int:
            raise TypeError(f"jit: {name} must be an int, got {type(value).__name__} {value!r}")
        if value < least:
            raise ValueError(f"jit: {name} must be at least {least}, got {value}")
    if mode not in ("plan", "interpret"):
        raise ValueError(f"jit: mode must be 'plan' or 'interpret', got {mode!r}")
    if type(reassociate) is not bool:
        raise TypeError(f"jit: reassociate must be True or False, got {type(reassociate).__name__} {reassociate!r}")
