"""Crash torture at CI size: about thirty SIGKILLs at random instants and at
kill points, each followed by a resume, with every invariant checked per run.
The soak is the same code: `python -m tests.torture --kills 2000`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.seeds import replay_hint
from tests.torture import crash

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")


def test_thirty_kills_lose_nothing_and_double_nothing(tmp_path: Path, seed: int) -> None:
    lines: list[str] = []
    reports = crash.torture(30, seed, tmp_path, log=lines.append)
    log = "\n".join(lines)
    print(log)
    assert sum(r.kills for r in reports) >= 30, log
    bad = [r for r in reports if not r.ok]
    assert not bad, f"{replay_hint(seed)}, or python -m tests.torture --seed {seed}\n{log}"


def test_code_changes_between_attempts_repeat_no_effect(tmp_path: Path, seed: int) -> None:
    """Issue 41: most resumes follow a deploy (a comment in a random
    phase, a new PHASEGATE_CODE_VERSION). An open phase replays into the new
    code, a done phase's drift is approved, and every invariant of the soak
    holds: no effect repeated, the outputs an uninterrupted run's."""
    lines: list[str] = []
    reports = crash.torture(12, seed, tmp_path, kills_per_run=4, redeploy_share=0.7, log=lines.append)
    log = "\n".join(lines)
    print(log)
    bad = [r for r in reports if not r.ok]
    assert not bad, f"{replay_hint(seed)}, or python -m tests.torture --kills 12 --redeploys 0.7 --seed {seed}\n{log}"
    assert sum(r.redeploys for r in reports) >= 2, log
    assert any(r.versions >= 2 for r in reports), log  # the attempts recorded the code they ran


def test_kills_through_the_real_command_line(tmp_path: Path, seed: int) -> None:
    """A few kills where every step is a spawned `python -m phasegate`, as a deploy runs it."""
    lines: list[str] = []
    reports = crash.torture(3, seed, tmp_path, mode="exec", items=2, kills_per_run=3, log=lines.append)
    log = "\n".join(lines)
    assert all(r.ok for r in reports), f"{replay_hint(seed)}\n{log}"
    assert sum(r.kills for r in reports) >= 3, log
