"""An exception leaving a jitted function carries the user's frames as eagerly (jit/frames.py):
the caller's line, then the function's and its callees', on every path a call can take
(warm-up, a graph's user error re-run eagerly, a fallback, a bound method, a jitted callee), and
`janus-like run` prints an uncaught exception exactly as `python script.py` does."""
import os
import subprocess
import sys
import traceback

import numpy as np

import janus_like as jl
from janus_like.jit.frames import PACKAGE

from .harness import load_module

STEP = """
import numpy as np

def helper(v):
    if v.sum() > 100:
        raise ValueError("too big")
    return v

def step(x, st):
    st["W"] += x
    return float(helper(st["W"]).sum())

class Model:
    def __init__(self):
        self.w = np.ones(2)

    def forward(self, x):
        return helper(self.w * x) * 2
"""


def _frames(fn, *args):
    try:
        fn(*args)
    except ValueError as exc:
        return [(f.name, f.lineno, os.path.basename(f.filename)) for f in traceback.extract_tb(exc.__traceback__)]
    raise AssertionError("no ValueError")


def test_a_users_error_carries_eagers_frames_on_every_path(tmp_path):
    mod = load_module(tmp_path, STEP)
    big = np.full(2, 200.0)
    eager = _frames(mod.step, big, {"W": np.zeros(2)})
    assert [f[0] for f in eager] == ["_frames", "step", "helper"]
    jf = jl.jit(mod.step)
    assert _frames(jf, big, {"W": np.zeros(2)}) == eager  # a warm-up call
    st = {"W": np.zeros(2)}
    for _ in range(6):
        jf(np.ones(2), st)
    assert _frames(jf, big, st) == eager  # the graph's error, re-run eagerly
    assert jf.stats()["graph_calls"] >= 2, jf.explain()
    assert _frames(jf, big, st) == eager  # the signature's calls after it

    class Holder:
        forward = jl.jit(mod.Model.forward)
    m, plain = Holder(), mod.Model()
    m.w = plain.w
    for _ in range(5):
        m.forward(np.ones(2))
    assert _frames(m.forward, big) == _frames(plain.forward, big)

    outer_src = STEP + "\ndef outer(x, st, inner):\n    return inner(x, st) + 1\n"
    mod2 = load_module(tmp_path, outer_src)
    outer, inner, st2 = jl.jit(mod2.outer), jl.jit(mod2.step), {"W": np.zeros(2)}
    for _ in range(5):
        outer(np.ones(2), st2, inner)
    expected = _frames(mod2.outer, big, {"W": np.zeros(2)}, mod2.step)
    assert [f[0] for f in expected] == ["_frames", "outer", "step", "helper"]
    assert _frames(outer, big, st2, inner) == expected


def test_a_call_with_the_wrong_arguments_has_no_frame_of_the_jit(tmp_path):
    mod = load_module(tmp_path, STEP)
    jf, st = jl.jit(mod.step), {"W": np.zeros(2)}
    for k in range(6):
        expected = None
        try:
            mod.step(np.ones(2))
        except TypeError as exc:
            expected = [f.name for f in traceback.extract_tb(exc.__traceback__)]
        try:
            jf(np.ones(2))
        except TypeError as exc:
            assert [f.name for f in traceback.extract_tb(exc.__traceback__)] == expected
        jf(np.ones(2), st)  # (warm-up, then graphs)


def test_an_error_of_janus_likes_own_code_keeps_its_frames():
    """Where no user frame follows (the JIT's own defect), the frames are the report."""
    jf = jl.jit(lambda x: x + 1)
    for _ in range(3):
        jf(np.ones(2))
    jf._entries = None  # broken: `_dispatch` raises AttributeError
    try:
        jf(np.ones(2))
    except AttributeError as exc:
        files = [f.filename for f in traceback.extract_tb(exc.__traceback__)]
    assert sum(f.startswith(PACKAGE) for f in files) >= 2, files


def test_janus_like_run_prints_an_uncaught_exception_as_python_does(tmp_path):
    """Also an exception the script catches and prints itself (the prologue's forwarding frame
    and the runtime's are cut as the exception leaves the function)."""
    script = tmp_path / "fails.py"
    script.write_text(STEP + "\nimport traceback\nst = {'W': np.zeros(2)}\nfor i in range(12):\n"
                             "    try:\n        step(np.full(2, 1.0 if i < 6 else 20.0), st)\n"
                             "    except ValueError:\n        traceback.print_exc()\n"
                             "step(np.full(2, 200.0), st)\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    wrapped = subprocess.run([sys.executable, "-m", "janus_like.cli", "run", str(script)], capture_output=True,
                             text=True)
    assert plain.returncode == wrapped.returncode == 1
    assert wrapped.stderr == plain.stderr and "ValueError: too big" in plain.stderr, wrapped.stderr
