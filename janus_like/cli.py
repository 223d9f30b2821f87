"""`janus-like` command line: run | report | bench | version.

    janus-like run [--report DIR] [--warmup N] [--hot-after N] [--include GLOB] [--exclude GLOB]
                   [--no-jit] script.py [args...]
    janus-like report DIR          # terminal summary of DIR/report.json
    janus-like bench [args...]     # benchmarks.runner (run from a source checkout)
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import traceback


def _parser():
    parser = argparse.ArgumentParser(prog="janus-like", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")
    run = sub.add_parser("run", help="run a Python script, jitting its hot functions",
                         description="Run SCRIPT like `python SCRIPT ARGS...`; functions defined in it (and in modules "
                                     "it imports from its own directory) that become hot are jitted automatically.")
    run.add_argument("--report", metavar="DIR", help="write report.json, report.html, trace.json and graphs/ to DIR")
    run.add_argument("--warmup", type=int, default=3, help="eager, profiled calls before a graph is generated (3)")
    run.add_argument("--hot-after", type=int, default=None, help="calls after which a function is hot (2)")
    run.add_argument("--include", action="append", default=None, metavar="GLOB",
                     help="only functions whose qualname matches (repeatable; default: all)")
    run.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="never these functions (repeatable)")
    run.add_argument("--no-jit", action="store_true", help="run the script untouched (for comparison)")
    run.add_argument("script")
    run.add_argument("args", nargs=argparse.REMAINDER)
    report = sub.add_parser("report", help="print a summary of a report directory")
    report.add_argument("directory")
    sub.add_parser("bench", help="training-step benchmarks (benchmarks.runner); arguments are passed on",
                   add_help=False)
    return parser


def _bench(argv) -> int:
    try:
        import benchmarks.runner as runner
    except ImportError:  # not installed: it lives next to the janus_like package in a checkout
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if not os.path.isdir(os.path.join(root, "benchmarks")):
            print("janus-like bench: the benchmarks/ directory is not available (run from a source checkout)",
                  file=sys.stderr)
            return 2
        sys.path.insert(0, root)
        import benchmarks.runner as runner
    return runner.main(list(argv)) or 0


def _run_problem(args) -> str | None:
    """What is wrong with `janus-like run`'s arguments before the script runs, or None."""
    if not os.path.exists(args.script):
        return f"can't open file {args.script!r}: no such file"
    if os.path.isdir(args.script):
        return f"can't run {args.script!r}: a directory (give the script file)"
    if args.report and os.path.exists(args.report) and not os.path.isdir(args.report):
        return f"--report {args.report!r}: a file is there (the report is a directory)"
    if args.warmup < 0:
        return f"--warmup {args.warmup}: must be 0 or more"
    if args.hot_after is not None and args.hot_after < 1:
        return f"--hot-after {args.hot_after}: must be 1 or more (calls before a function is hot)"
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        return _bench(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "version":
        from . import __version__

        print(__version__)
        return 0
    if args.command == "report":
        from .report import load, summary_text

        try:
            data = load(args.directory)
            text = summary_text(data)
        except (OSError, ValueError) as exc:
            print(f"janus-like report: cannot read {args.directory}: {exc}", file=sys.stderr)
            return 2
        except (KeyError, TypeError, AttributeError) as exc:  # valid JSON, not a report's fields
            print(f"janus-like report: {args.directory} is not a janus-like report (its {exc} is missing or "
                  "malformed)", file=sys.stderr)
            return 2
        print(text)
        return 0
    if args.command == "run":
        from .wrapper import DEFAULT_HOT_AFTER, run_path

        problem = _run_problem(args)
        if problem:
            print(f"janus-like run: {problem}", file=sys.stderr)
            return 2
        try:  # the script's syntax (and source encoding) as Python reports it, before anything runs
            with open(args.script, "rb") as f:
                compile(f.read(), os.path.abspath(args.script), "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
            return 1
        options = dict(warmup=args.warmup, hot_after=DEFAULT_HOT_AFTER if args.hot_after is None else args.hot_after,
                       include=args.include or ("*",), exclude=args.exclude)
        failed = None
        try:
            report = os.path.abspath(args.report) if args.report else None  # (before the script's own chdir)
            run_path(args.script, args.args, report=report, jit=not args.no_jit, **options)
        except Exception as exc:  # uncaught in the script: printed as Python prints it, from the
            failed = exc  # script's frames (jit/frames.py), through the script's own sys.excepthook
        finally:
            sys.stdout.flush()
            if args.report:
                print(f"janus-like: report written to {args.report}", file=sys.stderr)
        if failed is not None:
            from .jit.frames import user_traceback

            tb = user_traceback(failed.__traceback__)
            sys.excepthook(type(failed), failed.with_traceback(tb), tb)  # (Python's prints the exception's own)
            return 1
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
