"""`phasegate`'s entry point: logging set up for a terminal, arguments parsed
and checked to be text, the command run, its error printed as one line.

Its exit codes, the contract scripts rely on, are `errors.ExitCode`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from ..errors import ExitCode, PhasegateError, StoreError, UsageError
from ..observe import logs
from ..safetext import SafeFormatter, safe, storable
from .parser import build_parser

#: Arguments that name files or commands: bytes the file system takes as
#: they are. Every other text argument is stored or compared, so it must be
#: valid Unicode (argv bytes that are not UTF-8 arrive as lone surrogates).
_BYTES_ARGS = frozenset({"target", "input_file", "exec_cmd", "fn", "webhook_secret_file"})


def _check_text_args(args: argparse.Namespace) -> None:
    for key, value in vars(args).items():
        if key in _BYTES_ARGS or not isinstance(value, str):
            continue
        if not storable(value):
            name = key if key == "run_id" else "--" + key.replace("_", "-")
            raise UsageError(f"{name} is not valid UTF-8 text (or holds a NUL)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `phasegate` command.

    Args:
        argv: the arguments after the program's name (default: `sys.argv[1:]`).

    Returns:
        The exit code (an `ExitCode`, or what an external command returned).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    handler = logging.StreamHandler()
    handler.setFormatter(SafeFormatter("%(asctime)s %(name)s %(levelname)s %(message)s", tracebacks=debug))
    logging.basicConfig(
        level=logging.INFO if ("-v" in argv or "--verbose" in argv) else logging.WARNING,
        handlers=[handler],
    )
    if not ("-v" in argv or "--verbose" in argv):
        logging.getLogger("phasegate").setLevel(logging.ERROR)
    if _wants_json(argv):
        # From the first line: start-up and fatal lines are JSON too.
        logs.use_json(tracebacks=debug)
    try:
        args = build_parser().parse_args(argv)
    except PhasegateError as exc:
        # What argparse refused is the line itself: no code of ours ran, so
        # there is no traceback to show, --debug or not.
        _fatal(f"{exc.title}: {safe(exc.message)}")
        return exc.exit_code
    try:
        if getattr(args, "db", None) is None and args.global_db is not None:
            args.db = args.global_db
        _check_text_args(args)
        code = args.fn(args)
        # The engine's commands return an ExitCode; one from outside it
        # (console, demo, serve) or the worker's may be a plain int.
        return code if isinstance(code, ExitCode) else int(code)
    except PhasegateError as exc:
        if debug:
            raise
        _fatal(f"{exc.title}: {safe(_said(exc))}")
        return exc.exit_code
    except KeyboardInterrupt:
        _fatal("interrupted")
        return ExitCode.INTERRUPTED
    except PermissionError as exc:
        # A store (or its folder) this account may not look at: found by
        # whichever read comes first (the quick status, the store's checks).
        if debug:
            raise
        err = StoreError(f"{exc.strerror}: {exc.filename} (this account may not use this store)")
        _fatal(f"{err.title}: {safe(err.message)}")
        return err.exit_code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK


def _wants_json(argv: list[str]) -> bool:
    """`--log-format json` (or `=json`) among the arguments, before they are parsed."""
    if "--log-format=json" in argv:
        return True
    return any(a == "--log-format" and b == "json" for a, b in zip(argv, argv[1:], strict=False))


def _fatal(text: str) -> None:
    """The command's last line: `phasegate: ...` on stderr, or a JSON line under `--log-format json`."""
    logs.say(text, level="error", logger="phasegate.cli", prefix="phasegate: ")


def _said(exc: PhasegateError) -> str:
    """The error's words, with the flags of the options it is about (the core
    names none: `--phase` means nothing to the console)."""
    if not exc.options:
        return exc.message
    from .render import with_flags  # only for an error that names an option: a start does not pay for it

    return with_flags(exc.message, exc.options)


# build_parser too: tools and tests import it from here.
__all__ = ["build_parser", "main"]
