"""Decision and policy damage at CI size (#29): every kind of damage raw,
with and without a seal key, and forged with recomputed plain seals under a
key: each detected by `verify`, none applied by the worker."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.seeds import replay_hint
from tests.torture import decisions

pytestmark = [
    pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
        reason="the soak seconds decisions as another account (nobody): needs root and setpriv",
    ),
]


def test_decision_and_policy_damage_is_detected_and_never_applied(seed: int) -> None:
    n = len(decisions.KINDS) * 3
    # pytest's own folders are private to root; the second operator (nobody) must reach the store.
    work = Path(tempfile.mkdtemp(prefix="phasegate-decisions-"))
    os.chmod(work, 0o777)
    try:
        cases = decisions.soak(n, seed, work / "soak", log=lambda s: None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad = [f"{c.kind} keyed={c.keyed} forged={c.forged}: {'; '.join(c.notes)}" for c in cases if not c.ok]
    assert not bad, f"{replay_hint(seed)}\n" + "\n".join(bad) + "\n" + decisions.summary(cases)
    assert {(c.kind, c.keyed, c.forged) for c in cases} == {
        (k, keyed, forged) for k in decisions.KINDS for keyed, forged in ((False, False), (True, False), (True, True))
    }
