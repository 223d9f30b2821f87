"""janus_like.source: a function's definition read from its own lines is the one the standard
library's inspect finds, or the reader defers to inspect (never a shorter or different one)."""
import ast
import functools
import inspect
import textwrap

import pytest

from janus_like import source


def _by_inspect(fn):
    lines, first = inspect.getsourcelines(fn)
    module = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(module, first - 1)
    return module.body[0]


def decorated(f):
    @functools.wraps(f)
    def inner(*a):
        return f(*a)
    return inner


@decorated
@decorated
def two_decorators(x):
    return x + 1


def multi_line_return(x, y):
    return (x
            + y)


def trailing_else_pass(x):
    if x > 0:
        x = x * 2
    else:
        pass


def trailing_string(x):
    y = x * 2
    return y
    """a note after the return"""


def trailing_dead_code(x):
    y = x + 1
    return y
    if False:
        z = 1  # never runs, yet makes z local
        return z


def with_nested(x):
    def inner(y):
        return (y *
                2)
    return inner(x)


class Holder:
    def method(self, x):
        # a comment line
        return x  # trailing comment

    async def coroutine(self):
        return 1


CASES = [two_decorators.__wrapped__.__wrapped__, multi_line_return, trailing_else_pass, trailing_string,
         trailing_dead_code, with_nested, Holder.method, Holder.coroutine]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_definition_is_the_one_inspect_finds(fn):
    source._parse_cached.cache_clear()
    got = source.function_ast(fn)
    assert ast.dump(got, include_attributes=True) == ast.dump(_by_inspect(fn), include_attributes=True)


def test_own_lines_are_used_where_they_are_whole_and_deferred_otherwise():
    assert source._from_own_lines(multi_line_return.__code__) is not None
    assert source._from_own_lines(Holder.method.__code__) is not None
    assert source._from_own_lines(trailing_else_pass.__code__) is not None  # `pass` is an instruction
    # the instructions end before lines that still belong to the definition (a string, dead
    # code): inspect decides
    for fn in (trailing_string, trailing_dead_code):
        assert source._from_own_lines(fn.__code__) is None, fn.__name__


def test_nested_function_from_its_own_lines():
    inner = with_nested(1) and with_nested.__code__.co_consts
    code = next(c for c in inner if inspect.iscode(c))
    got = source._from_own_lines(code)
    assert got is not None and got.name == "inner"
    assert got.lineno == code.co_firstlineno


def test_a_source_file_edited_after_import_is_not_read_as_the_function(tmp_path, monkeypatch):
    # the file now has another function where f was defined: the profiler instrumented that one
    # (the user's call raised a TypeError); now f has no source and runs eagerly
    import importlib
    import os
    import sys

    import numpy as np

    import janus_like as jl

    path = tmp_path / "edited_mod.py"
    path.write_text("def f(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("edited_mod")
    path.write_text("def g(a, b):\n    return a - b\n\n\ndef f(x):\n    return x * 2\n")
    os.utime(path, (1, 1))  # another mtime: linecache reads the new text
    jf = jl.jit(mod.f)
    assert [float(jf(np.float64(k))) for k in range(6)] == [2.0 * k for k in range(6)]
    assert "no longer f()" in jf.explain(), jf.explain()
    sys.modules.pop("edited_mod", None)
