"""Pause torture at CI size: holders frozen with SIGSTOP at pause points
(after an effect's intent, at a phase's start, inside a checkpoint's commit)
with a 1 s lease, while the operator does nothing, takes the run over with
--force, or answers its in-doubt charge with --force; then SIGCONT. Beside a
few kills, every invariant of the crash torture is checked per run: no
charge twice, outputs equal to an uninterrupted run's, verify clean. The
soak: `python -m tests.torture --kills 200 --pauses 200`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.seeds import replay_hint
from tests.torture import crash

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")


def test_pauses_beside_kills_lose_nothing_and_double_nothing(tmp_path: Path, seed: int) -> None:
    lines: list[str] = []
    reports = crash.torture(6, seed, tmp_path, pauses=16, log=lines.append)
    log = "\n".join(lines)
    print(log)
    assert sum(sum(r.pauses.values()) for r in reports) >= 16, log
    bad = [r for r in reports if not r.ok]
    assert not bad, f"{replay_hint(seed)}, or python -m tests.torture --seed {seed} --pauses 16\n{log}"
