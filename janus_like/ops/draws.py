"""Draws: the uniform numbers of `F.dropout` from an explicit `numpy.random.Generator`, and
`draw_of`, any Generator method the graph generator meets on a Generator reached through the
function's inputs (`rng.normal(0, 0.1, size=...)`, `rng.random()`), on a `random.Random` (the
`random` module's functions draw from its hidden instance), or on the NumPy global RNG when its
arguments are values the graph computes (`np.random.choice(n, p=probs)`). All are stateful:
never folded or merged, kept in program order, and the executor saves and restores the
generators' states around a run that may fail (`state_of`, `restore`; the global RNG's:
`global_state`, `restore_global`). Also the standard library's clocks."""
from __future__ import annotations

import ctypes
import random
import time

import numpy as np

from .registry import register


def _uniform(xp, rng, shape, dtype):
    return rng.random(shape).astype(dtype, copy=False)


register("random_uniform", _uniform, stateful=True, shape=lambda rng, shape, dtype: (shape, dtype),
         doc="uniform [0, 1) numbers drawn from the given Generator")


class Hole:
    """Where the draw's i-th graph value goes in its arguments (`draw_of`)."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"<value {self.index}>"


def fill(template, values):
    """The arguments with each Hole replaced by its value (in lists and tuples too)."""
    cls = template.__class__
    if cls is Hole:
        return values[template.index]
    if cls is list or cls is tuple:
        return cls(fill(t, values) for t in template)
    return template


class SlotRng:
    """A `draw_of` node's generator when it is an input of the graph: the object in guard slot
    `index` at each call (`rng.normal(...)` with `rng` an argument or an attribute: a training
    loop that makes a new Generator every epoch runs one graph, not one per Generator). The
    plan draws from that slot's value; `resolve` gives it for the kernel."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"<generator in slot {self.index}>"

    def __eq__(self, other):
        return other.__class__ is SlotRng and other.index == self.index

    def __hash__(self):
        return hash(("SlotRng", self.index))


def resolve(params, slots):
    """A draw node's params with a SlotRng generator replaced by the slot's object."""
    rng = params.get("rng")
    if rng.__class__ is not SlotRng:
        return params
    return {**params, "rng": slots[rng.index]}


def _draw_of(xp, *values, rng, method, args, kwargs):
    fn = getattr(np.random if rng is None else rng, method)
    if not values:  # `rng.normal(0, 0.1, size=x.shape)`: nothing to fill in
        return fn(*args, **kwargs)
    return fn(*fill(args, values), **{k: fill(v, values) for k, v in kwargs.items()})


register("draw_of", _draw_of, stateful=True,
         doc="a draw of method `method` of Generator or random.Random `rng` (None: the NumPy global RNG), called "
             "with `args`/`kwargs`, each Hole in them filled with the node's inputs in order (`rng.binomial(1, p)`, "
             "`np.random.choice(n, p=probs)`): a Python number or an array, as the method gives it")


# The NumPy global RNG's state, saved around every run of a graph that draws from it. Its
# get_state() builds a tuple around a copy of the Mersenne Twister's 624 words: ~24 us a call,
# more than a small step's whole graph. The bit generator's own state struct (`key[624]`, `pos`:
# 2,500 bytes, at NumPy's documented `bit_generator.ctypes.state_address`) is copied in ~0.3 us
# instead, for graphs whose draws neither read nor leave the legacy generator's cached Gaussian
# (which lives outside that struct: normal draws, `seed`). `global_state()` checks once that the
# copy puts the generator back exactly, else it falls back to get_state().
GAUSS_FREE = frozenset(("rand", "random", "random_sample", "ranf", "sample", "uniform", "randint", "choice",
                        "permutation", "shuffle", "bytes"))
_MT_STATE_BYTES = 624 * 4 + 4
_FAST_STATE = []  # [bool]: whether the struct copy was checked to restore the global RNG exactly


def _bit_generator():
    return np.random.mtrand._rand._bit_generator


def _fast_state_works() -> bool:
    if not _FAST_STATE:
        ok, before = False, np.random.get_state()
        try:
            if type(_bit_generator()).__name__ == "MT19937":
                saved = ctypes.string_at(_bit_generator().ctypes.state_address, _MT_STATE_BYTES)
                drawn = np.random.random_sample(700)  # past one refill of the 624 words
                ctypes.memmove(_bit_generator().ctypes.state_address, saved, _MT_STATE_BYTES)
                after = np.random.get_state()
                ok = before[0] == after[0] and bool((before[1] == after[1]).all()) and before[2:] == after[2:] \
                    and bool((np.random.random_sample(700) == drawn).all())
        except Exception:
            ok = False
        finally:
            np.random.set_state(before)  # the check leaves the user's generator as it found it
        _FAST_STATE.append(ok)
    return _FAST_STATE[0]


def global_state(gauss_free: bool):
    """The global RNG's state for `restore_global`: the struct's bytes when `gauss_free` (the
    graph's global draws are all GAUSS_FREE methods) and the copy was checked, else get_state()."""
    if gauss_free and _fast_state_works():
        return ctypes.string_at(_bit_generator().ctypes.state_address, _MT_STATE_BYTES)
    return np.random.get_state()


def restore_global(state):
    if type(state) is bytes:
        ctypes.memmove(_bit_generator().ctypes.state_address, state, _MT_STATE_BYTES)
    else:
        np.random.set_state(state)


def state_of(rng):
    """The state of a numpy Generator, a `RandomState` or a `random.Random`, for `restore`."""
    if isinstance(rng, random.Random):
        return rng.getstate()
    if isinstance(rng, np.random.RandomState):  # (its bit generator's state and the cached Gaussian; the
        return rng.get_state(legacy=False)  # legacy tuple warns for bit generators other than MT19937)
    return rng.bit_generator.state


def restore(rng, state):
    if isinstance(rng, random.Random):
        rng.setstate(state)
    elif isinstance(rng, np.random.RandomState):
        rng.set_state(state)  # (with its cached Gaussian: `randn` draws two at a time)
    else:
        rng.bit_generator.state = state


# The standard library's clocks: `t0 = time.perf_counter()` in a step that logs its own time.
# A read is a stateful node (never folded, merged or dropped, kept in order with the other
# effects), and the plan keeps it where the program put it among the ops, so `perf_counter() -
# t0` measures the graph's work in between.
CLOCKS = frozenset((time.time, time.perf_counter, time.monotonic, time.process_time, time.thread_time,
                    time.time_ns, time.perf_counter_ns, time.monotonic_ns, time.process_time_ns,
                    time.thread_time_ns))


def _clock(xp, fn):
    return fn()


register("clock", _clock, stateful=True, shape=lambda fn: ((), np.dtype(type(fn()))),
         doc="a reading of the standard library clock `fn` (`time.perf_counter`, ...), a Python number")
