"""Real commands exit with what the contract says (scripts branch on these
numbers): `python -m phasegate` in a child for each, through a run's life.
The enum itself and `--help`'s table are tests/unit/test_exit_codes.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from phasegate import ClaimedByOther, ExitCode, RunNotFound, UsageError
from tests.support.cli import ROOT, child_env


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
