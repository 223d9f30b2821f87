"""`janus-like` command line: run | bench | report."""
from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="janus-like", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("version", help="print the version")
    args, rest = parser.parse_known_args(argv)
    if args.command == "version":
        from . import __version__

        print(__version__)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
