"""Reports: report.json validates against its schema, the HTML page is self-contained, the
Chrome trace is well formed, DOT drawings exist, and `janus-like report DIR` summarizes."""
from __future__ import annotations

import contextlib
import html.parser
import io
import json
import os
import shutil
import subprocess

import pytest

from janus_like import cli
from janus_like.report import SCHEMA_VERSION, load, load_schema, validate
from janus_like.wrapper import run_path

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wrapper_scripts")


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    with contextlib.redirect_stdout(io.StringIO()):
        run_path(os.path.join(SCRIPTS, "breaks_assumptions.py"), report=str(out))
    return out


def test_json_is_versioned_and_validates(report_dir):
    data = load(str(report_dir))
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert validate(data, load_schema()) == []
    layer = next(f for f in data["functions"] if f["name"] == "layer")
    assert layer["counters"]["graph_calls"] > 0 and layer["graphs"] and layer["graphs"][0]["nodes"] > 0
    failed = [a for g in layer["graphs"] for a in g["assumptions"] if a["failures"]]
    fallbacks = layer["fallbacks"]
    assert fallbacks and all(fb["hint"] for fb in fallbacks if fb["reason"] == "assumption")
    # assumptions and fallbacks carry their source line
    assert any(fb["source"] and "if y.sum() > threshold" in fb["source"] for fb in fallbacks) or failed


def test_validator_reports_violations():
    schema = load_schema()
    assert any("missing required key 'generator'" in e for e in validate({"schema_version": 1}, schema))
    assert any("expected 1" in e for e in validate({"schema_version": 2}, schema))
    assert validate({"a": -1}, {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}) == \
        ["$.a: -1 < minimum 0"]


def test_every_assumption_kind_the_jit_makes_is_in_the_schema():
    import pathlib
    import re

    import janus_like

    source = pathlib.Path(janus_like.__file__).parent
    kinds = {m for f in source.rglob("*.py") for m in re.findall(r'Assumption\("(\w+)"', f.read_text())}
    enum = load_schema()["definitions"]["assumption"]["properties"]["kind"]["enum"]
    assert kinds and kinds <= set(enum), kinds - set(enum)


def test_json_validates_with_jsonschema_when_installed(report_dir):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is not installed (not a dependency)")
    jsonschema.validate(load(str(report_dir)), load_schema())


class _Collector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.external = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href") and v and (v.startswith(("http:", "https:", "//"))):
                self.external.append(v)


def test_html_is_one_self_contained_page(report_dir):
    text = (report_dir / "report.html").read_text()
    p = _Collector()
    p.feed(text)
    assert not p.external and "script" not in p.tags and "link" not in p.tags
    assert "svg" in p.tags and "rect" in p.tags  # the timeline
    for needle in ("layer", "accumulate", "Timeline", "assumption", "hint", "ms / call"):
        assert needle in text


def test_trace_is_chrome_trace_format(report_dir):
    trace = json.loads((report_dir / "trace.json").read_text())
    events = trace["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all({"name", "ts", "dur", "pid", "tid"} <= set(e) for e in spans)
    kinds = {e["cat"] for e in spans}
    assert {"script", "warmup", "graph"} <= kinds
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in events)
    assert all(e["dur"] >= 0 for e in spans)


def test_dot_drawings_and_svg_only_with_graphviz(report_dir):
    data = load(str(report_dir))
    graphs = [g for f in data["functions"] for g in f["graphs"]]
    assert graphs and all(g["dot"] for g in graphs)
    for g in graphs:
        text = (report_dir / g["dot"]).read_text()
        assert text.startswith("digraph") and "->" in text
        assert (g["svg"] is not None) == (shutil.which("dot") is not None)


def test_cli_report_prints_a_summary(report_dir, capsys):
    assert cli.main(["report", str(report_dir)]) == 0
    out = capsys.readouterr().out
    assert "janus_like report" in out and "layer" in out and "graph" in out


def test_cli_run_writes_report(tmp_path, capsys):
    rc = cli.main(["run", "--report", str(tmp_path), "--hot-after", "3", os.path.join(SCRIPTS, "numpy_state.py"), "5"])
    assert rc == 0
    data = load(str(tmp_path))
    assert data["script"]["argv"] == ["5"] and data["script"]["options"]["hot_after"] == 3
    assert validate(data, load_schema()) == []
    assert "steps 12" in capsys.readouterr().out


def test_no_jit_run_still_reports(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        run_path(os.path.join(SCRIPTS, "pure_python.py"), report=str(tmp_path), jit=False)
    data = load(str(tmp_path))
    assert data["script"]["jit"] is False and data["functions"] == []
    assert validate(data, load_schema()) == []


def test_cli_bench_is_wired():
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stdout(io.StringIO()):
        cli.main(["bench", "--help"])
    assert exc.value.code == 0


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"),
                    reason="headless Chromium (/usr/bin/chromium) is not installed")
def test_html_renders_in_headless_chromium(report_dir):
    url = "file://" + str(report_dir / "report.html")
    dom = subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
                         capture_output=True, text=True, timeout=60).stdout
    assert "janus_like report" in dom and "<svg" in dom


def test_a_relative_report_directory_is_the_callers_though_the_script_changes_directory(tmp_path, monkeypatch):
    script, away = tmp_path / "train.py", tmp_path / "elsewhere"
    away.mkdir()
    script.write_text(f"import os\nos.chdir({str(away)!r})\nprint('ran')\n")
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["run", "--report", "rep", str(script)]) == 0
    assert (tmp_path / "rep" / "report.json").exists() and not (away / "rep").exists()
