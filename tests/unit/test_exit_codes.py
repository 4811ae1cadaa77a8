"""The exit codes are one `ExitCode` enum: every error's `exit_code` is one
of its members, `phasegate --help` lists them all, and real commands exit
with what the contract says (scripts branch on these numbers)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import phasegate
from phasegate import ClaimedByOther, ExitCode, PhasegateError, RunNotFound, UsageError
from phasegate.cli import build_parser
from tests.support.cli import ROOT, child_env

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


def _phasegate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phasegate", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env(drop=("PHASEGATE_DB", "PHASEGATE_OPERATOR")),
        timeout=60,
    )


WORKFLOW = """
from phasegate import Workflow

wf = Workflow("exit-codes")


@wf.phase()
def first(ctx) -> str:
    return "one"


@wf.phase(needs=["first"])
def second(ctx, first) -> str:
    if ctx.inputs.get("fail"):
        raise RuntimeError("asked to fail")
    return first
"""


@pytest.mark.parametrize(
    "argv",
    [(), ("status", "--no-such-flag"), ("worker", "--poll", "0"), ("decide", "r1", "approve")],
    ids=["no command", "unknown flag", "bad seconds", "missing --reason"],
)
def test_bad_usage_exits_2(argv: tuple[str, ...], tmp_path: Path) -> None:
    p = _phasegate(*argv, "--db", tmp_path / "s.db")
    assert p.returncode == UsageError.exit_code == ExitCode.USAGE == 2, p.stderr
    assert p.stderr.startswith("phasegate: bad usage: ") and p.stdout == ""
    assert not (tmp_path / "s.db").exists()


def test_a_runs_life_exits_as_documented(tmp_path: Path) -> None:
    db, wf = tmp_path / "s.db", tmp_path / "wf.py"
    wf.write_text(WORKFLOW)
    target = f"{wf}:wf"

    assert _phasegate("run", target, "--run-id", "good", "--db", db).returncode == ExitCode.OK == 0
    p = _phasegate("run", target, "--run-id", "bad", "--input", '{"fail": true}', "--db", db)
    assert p.returncode == ExitCode.FAILED == 1, p.stdout + p.stderr

    p = _phasegate("status", "nope", "--db", db)
    assert p.returncode == RunNotFound.exit_code == 2, p.stderr
    assert p.stderr.startswith("phasegate: no such run: ")

    # The code of a phase that is done changed under the failed run: resuming
    # it stops for an operator.
    wf.write_text(WORKFLOW.replace('return "one"', 'return "uno"'))
    p = _phasegate("resume", "bad", "--db", db)
    assert p.returncode == ExitCode.BLOCKED == 3, p.stdout + p.stderr
    assert p.stdout.startswith("bad: blocked")

    assert _phasegate("claim", "bad", "--operator", "ada", "--db", db).returncode == ExitCode.OK
    p = _phasegate("claim", "bad", "--operator", "bob", "--db", db)
    assert p.returncode == ClaimedByOther.exit_code == ExitCode.HELD == 4, p.stderr
    assert p.stderr.startswith("phasegate: run claimed: ")

    assert _phasegate("--help").returncode == ExitCode.OK
