"""The exit codes are one `ExitCode` enum: every error's `exit_code` is one
of its members and `phasegate --help` lists them all. That real commands exit
with what the contract says is tests/engine/test_exit_codes_cli.py's."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator

import phasegate
from phasegate import ExitCode, PhasegateError
from phasegate.cli import build_parser

#: The numbers scripts rely on (docs/reference/cli.md's table): a member renumbered breaks them.
CONTRACT = {"OK": 0, "FAILED": 1, "USAGE": 2, "BLOCKED": 3, "HELD": 4, "WAITING": 5, "CANCELLED": 6, "INTERRUPTED": 130}

#: The errors whose code is not the base's USAGE.
NOT_USAGE = {
    "RunHeld": ExitCode.HELD,
    "HolderStalled": ExitCode.HELD,
    "LeaseLost": ExitCode.HELD,
    "ClaimedByOther": ExitCode.HELD,
    "DemoError": ExitCode.FAILED,
    "RunPaused": ExitCode.WAITING,
    "RunCancelled": ExitCode.CANCELLED,
    "MessageRefused": ExitCode.BLOCKED,
}


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _every_error() -> list[type[PhasegateError]]:
    """Every PhasegateError subclass the engine, the served console's command
    and the demo define (each module imported, so none is missed)."""
    for mod in pkgutil.walk_packages(phasegate.__path__, "phasegate."):
        if not mod.name.endswith("__main__"):  # it would run the command
            importlib.import_module(mod.name)
    importlib.import_module("phasegate.console.web.command")
    importlib.import_module("phasegate.sample_runs._build")
    return [PhasegateError, *_subclasses(PhasegateError)]


def test_the_codes_keep_their_numbers() -> None:
    assert {m.name: m.value for m in ExitCode} == CONTRACT


def test_every_error_exits_with_an_exit_code_member() -> None:
    errors = _every_error()
    names = {e.__name__ for e in errors}
    assert {"RunNotFound", "GroupRefused", "ServeError", "DemoError"} <= names
    for err in errors:
        assert type(err.exit_code) is ExitCode, f"{err.__name__}.exit_code is {err.exit_code!r}"
        assert err.exit_code is NOT_USAGE.get(err.__name__, ExitCode.USAGE), err.__name__


def test_help_lists_every_exit_code() -> None:
    text = build_parser().format_help()
    table = text[text.index("exit codes:") :].splitlines()
    listed = {line.split()[0] for line in table[1:] if line[2:3].isdigit()}
    assert listed == {str(m.value) for m in ExitCode}
