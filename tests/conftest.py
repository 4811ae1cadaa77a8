"""Shared fixtures: a real database file per test, and the real command line
run in a subprocess (the way an operator or a deploy script uses it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = Path(__file__).resolve().parent / "workflows"
BILLING = f"{WORKFLOWS / 'billing.py'}:wf"


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m phasegate ARGS` and return the finished process."""
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT), full_env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "phasegate", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        cwd=cwd or ROOT,
    )


def status_json(db: Path, run_id: str | None = None) -> Any:
    args = ["status", "--json", "--db", str(db)]
    if run_id:
        args.insert(1, run_id)
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return cli
