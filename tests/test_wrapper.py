"""The transparent wrapper: scripts print exactly what `python script.py` prints, and their hot
functions really run as graphs."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from janus_like.wrapper import run_path

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "wrapper_scripts")
ROOT = os.path.dirname(HERE)


def script(name):
    return os.path.join(SCRIPTS, name)


def run_captured(path, argv=None, **options):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        g = run_path(path, argv, **options)
    return buf.getvalue(), g


def stats_by_name(g):
    return {h.site.qualname: h.jf.stats() for h in g.run.functions()}


@pytest.mark.parametrize("name", ["numpy_state.py", "decorated.py", "janus_script.py"])
def test_same_stdout_and_hot_functions_run_as_graphs(name):
    plain, _ = run_captured(script(name), jit=False)
    wrapped, g = run_captured(script(name))
    assert wrapped == plain
    stats = stats_by_name(g)
    assert stats and any(s["graph_calls"] > 0 for s in stats.values()), stats


def test_numpy_state_every_hot_function_is_a_graph_and_final_state_matches():
    _, plain = run_captured(script("numpy_state.py"), ["11"], jit=False)
    _, wrapped = run_captured(script("numpy_state.py"), ["11"])
    stats = stats_by_name(wrapped)
    assert set(stats) == {"noisy_step", "scale_in_place", "per_step", "normalize_rows"}  # helper_mod too
    assert all(s["graph_calls"] >= 5 for s in stats.values()), stats
    assert (plain["W"] == wrapped["W"]).all() and (plain["running"] == wrapped["running"]).all()
    assert (plain["history"]["loss"] == wrapped["history"]["loss"]).all()
    assert plain["step_count"] == wrapped["step_count"] == 12
    assert "__janus_like_rt__" not in wrapped


def test_keyword_only_parameters_run_as_graphs():
    """The wrapper forwards keyword-only parameters as keywords: such calls ran eagerly, outside
    the JIT (which now takes their values after the positional ones)."""
    plain, _ = run_captured(script("keyword_only.py"), jit=False)
    wrapped, g = run_captured(script("keyword_only.py"))
    assert wrapped == plain
    assert stats_by_name(g)["step"]["graph_calls"] >= 12, stats_by_name(g)


def test_python_int_global_keeps_its_type():
    _, wrapped = run_captured(script("numpy_state.py"), ["11"])
    assert type(wrapped["step_count"]) is int


def test_assumptions_breaking_half_way_still_match_plain_python():
    plain, _ = run_captured(script("breaks_assumptions.py"), jit=False)
    wrapped, g = run_captured(script("breaks_assumptions.py"))
    assert wrapped == plain
    stats = stats_by_name(g)
    assert stats["layer"]["graph_calls"] > 0 and stats["layer"]["graphs_generated"] >= 2
    assert stats["layer"]["fallbacks"] + stats["layer"]["guard_failures"] > 0
    assert stats["accumulate"]["graphs_generated"] >= 2


def test_subprocess_cli_is_byte_identical_to_python():
    path = os.path.join(ROOT, "examples", "char_rnn_numpy.py")
    env = dict(os.environ, PYTHONHASHSEED="0")
    plain = subprocess.run([sys.executable, path, "120"], capture_output=True, env=env, check=True).stdout
    wrapped = subprocess.run([sys.executable, "-m", "janus_like.cli", "run", path, "120"], capture_output=True,
                             env=env, check=True, cwd=ROOT).stdout
    assert wrapped == plain and b"iter 100, loss" in plain


def test_no_array_code_is_left_alone():
    plain, _ = run_captured(script("pure_python.py"), jit=False)
    wrapped, g = run_captured(script("pure_python.py"))
    assert wrapped == plain
    assert g.run.functions() == []
    reasons = g.run.runtime.demoted.values()
    assert reasons and all(r.startswith("no array code") for r in reasons)
    fib = g["fib"]
    assert fib.__code__.co_names.count("__janus_like_rt__") == 0  # its clean code is back


def test_argv_main_path_and_exit_status_are_like_python_and_restored():
    argv0, path0 = list(sys.argv), list(sys.path)
    main = sys.modules.get("__main__")
    with pytest.raises(SystemExit) as exc:
        run_captured(script("exit_and_argv.py"), ["3", "x"])
    assert exc.value.code == 3
    assert sys.argv == argv0 and sys.path == path0 and sys.modules.get("__main__") is main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit):
        run_path(script("exit_and_argv.py"), ["0", "y"])
    assert buf.getvalue() == "argv ['0', 'y'] name __main__ path0 wrapper_scripts\n"


def test_include_exclude_and_no_jit():
    _, g = run_captured(script("numpy_state.py"), exclude=["noisy_*"])
    assert "noisy_step" not in stats_by_name(g) and "per_step" in stats_by_name(g)
    _, g = run_captured(script("numpy_state.py"), include=["per_step"])
    assert set(stats_by_name(g)) == {"per_step"}
    _, g = run_captured(script("numpy_state.py"), jit=False)
    assert g.run.functions() == [] and g.run.runtime is None


def test_helper_modules_are_fresh_for_each_run():
    run_captured(script("numpy_state.py"))
    assert "helper_mod" not in sys.modules
    _, g = run_captured(script("numpy_state.py"), hot_after=5, warmup=2)
    s = stats_by_name(g)["normalize_rows"]
    assert s["calls"] == 12 - 4 and s["warmup_calls"] == 2


def test_script_jitted_functions_are_not_jitted_twice():
    _, g = run_captured(script("janus_script.py"))
    assert [j.__wrapped__.__name__ for j in g.run.user_jits()] == ["train_step"]
    assert "train_step" not in stats_by_name(g)
    assert g.run.user_jits()[0].stats()["graph_calls"] > 0


def test_script_exception_propagates(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\n\ndef f(x):\n    return x[10]\n\nfor i in range(6):\n"
                   "    f(np.arange(11 if i < 5 else 3))\n")
    with pytest.raises(IndexError):
        run_path(str(bad), report=str(tmp_path / "rep"))
    assert (tmp_path / "rep" / "report.json").exists()


def test_the_scripts_globals_are_those_python_gives(tmp_path):
    """`__builtins__` is the builtins module (a script may call `__builtins__.len`), `__loader__`
    a source loader, `__annotations__` a dict: what `python script.py` shows the script."""
    path = tmp_path / "globals_script.py"
    path.write_text("print(__builtins__.len([1, 2]), type(__loader__).__name__, __annotations__, __name__)\n")
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True).stdout
    wrapped, _ = run_captured(str(path))
    assert wrapped == plain == "2 SourceFileLoader {} __main__\n"


def test_command_line_mistakes_are_named_before_the_script_runs(tmp_path, capsys):
    """A syntax error is Python's report of it (no janus_like frames), a source in another
    encoding names its file, and bad options or a directory for a script are refused at once."""
    from janus_like.cli import main

    (tmp_path / "syn.py").write_text("x = 1\ndef f(:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"# coding: ascii\nx = '\xe9'\n")
    (tmp_path / "ok.py").write_text("print('ran')\n")
    (tmp_path / "afile").write_text("")
    assert main(["run", str(tmp_path / "syn.py")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f'  File "{tmp_path / "syn.py"}", line 2') and err.endswith("SyntaxError: invalid syntax\n")
    assert "janus_like" not in err
    assert main(["run", str(tmp_path / "latin.py")]) == 1
    assert str(tmp_path / "latin.py") in capsys.readouterr().err
    for argv, said in [(["run", str(tmp_path)], "a directory"),
                       (["run", "--report", str(tmp_path / "afile"), str(tmp_path / "ok.py")], "a file is there"),
                       (["run", "--hot-after", "0", str(tmp_path / "ok.py")], "must be 1 or more"),
                       (["run", str(tmp_path / "missing.py")], "no such file")]:
        assert main(argv) == 2
        out = capsys.readouterr()
        assert said in out.err and "ran" not in out.out, (argv, out)
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "report.json").write_text('{"schema_version": 1}')
    assert main(["report", str(tmp_path / "rep")]) == 2
    assert "not a janus-like report" in capsys.readouterr().err
