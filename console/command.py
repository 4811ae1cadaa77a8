"""`phasegate console`: registered by the engine's CLI when this package is
installed (see `phasegate.cli.parser.EXTERNAL`)."""

from __future__ import annotations

import argparse
from typing import Any

from phasegate.ops import default_db


def add_console(subparsers: Any) -> None:
    p = subparsers.add_parser("console", help="open the operations console (a terminal UI)")
    add_arguments(p)
    p.set_defaults(fn=cmd_console)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=None, help="database path (default: $PHASEGATE_DB, else ./phasegate.db)")
    p.add_argument("--read-only", action="store_true", help="show everything, offer no action, write nothing")
    p.add_argument("--no-mouse", action="store_true", help="leave the terminal's own text selection free")
    p.add_argument("--run", default=None, metavar="ID", help="open this run's detail (Esc goes to the list)")
    p.add_argument(
        "--show",
        default=None,
        metavar="STATUS",
        help="open the list filtered: all, attention, running, failed, completed",
    )
    p.add_argument(
        "--filter", default=None, metavar="TEXT", help="open the list filtered by run id, workflow or reason"
    )


def cmd_console(args: argparse.Namespace) -> int:
    from . import run_console
    from .served import tether

    # Before the store is opened: a served console whose server is gone opens nothing.
    tether()

    return run_console(
        args.db or default_db(),
        read_only=args.read_only,
        mouse=not args.no_mouse,
        run_id=args.run,
        show=args.show,
        text=args.filter,
    )
