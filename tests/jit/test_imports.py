"""`import` statements inside jitted code: after the first run an import is a lookup in
`sys.modules`, so the graph binds the names to what the statement gives; `from m import f`
reads `m.f` as the attribute read does (a user module's function replaced between calls is
seen, as eager sees it). Side by side with eager."""
import sys

import numpy as np

from .harness import call_sequence, check, fallback_reasons, load_module


def test_module_and_name_imports_run_in_the_graph(tmp_path):
    module = load_module(tmp_path, """
        import numpy as np


        def f(x, k):
            import math
            import numpy.linalg as la
            import os.path
            from numpy import tanh as th
            from os import path
            return th(x) * math.sqrt(2.0) + la.norm(x), os.path.sep + path.sep
        """)
    jf = check(lambda: (module.f, None), call_sequence(6, lambda s, i: (np.full(3, 0.5 * i), i)), min_graph_calls=3)
    assert fallback_reasons(jf) == set(), jf.explain()


def test_a_function_imported_from_a_user_module_is_read_as_its_attribute(tmp_path):
    helpers = load_module(tmp_path, "def act(x):\n    return x * 2.0\n", "helpers_imp")
    module = load_module(tmp_path, f"""
        def f(x):
            from {helpers.__name__} import act
            return act(x) + 1.0
        """)

    def args(s, i):
        if i == 5:  # the user replaces the function: eager's import gets the new one
            helpers.act = lambda x: x * 3.0
        return (np.full(2, float(i)),)

    check(lambda: (module.f, None), call_sequence(8, args), min_graph_calls=3)


def test_a_relative_import_and_a_global_binding(tmp_path):
    pkg = tmp_path / "pkg_imp"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text("SCALE = 3.0\n")
    (pkg / "step.py").write_text("def f(x):\n    global util\n    from . import util\n"
                                 "    from .util import SCALE\n    return x * SCALE + util.SCALE\n")
    sys.path.insert(0, str(tmp_path))
    try:
        from pkg_imp import step
        check(lambda: (step.f, None), call_sequence(6, lambda s, i: (np.full(2, float(i)),)), min_graph_calls=3)
        assert step.util is sys.modules["pkg_imp.util"]
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("pkg_imp", "pkg_imp.util", "pkg_imp.step"):
            sys.modules.pop(name, None)


def test_an_import_of_a_module_not_imported_yet_stays_eager(tmp_path):
    # the import runs in a branch the warm-up never took: the first call that takes it runs
    # eagerly (and imports), as does every call of that signature
    import janus_like as jl

    (tmp_path / "late_imp.py").write_text("VALUE = 7\n")
    module = load_module(tmp_path, """
        def f(x, late):
            if late:
                import late_imp
                return x + late_imp.VALUE
            return x
        """)
    sys.path.insert(0, str(tmp_path))
    try:
        jf = jl.jit(module.f)
        for i in range(8):
            assert np.array_equal(jf(np.ones(2), i >= 5), np.ones(2) + 7 * (i >= 5))
        assert "late_imp" in sys.modules
        assert "`import late_imp` of a module not imported yet" in jf.explain(), jf.explain()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("late_imp", None)
