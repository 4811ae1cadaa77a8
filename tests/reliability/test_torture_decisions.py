"""Decision and policy damage at CI size (#29, #38): every kind of damage
raw, with and without a seal key, and forged with recomputed plain seals
under a key, on SQLite and on PostgreSQL: each detected by `verify`, none
applied by the worker. `PHASEGATE_TEST_SOAK=1` runs every kind three times
over in each mode."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.seeds import replay_hint
from tests.support.soak import size
from tests.torture import decisions

pytestmark = [
    pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
        reason="the soak seconds decisions as another account (nobody): needs root and setpriv",
    ),
]


@pytest.mark.parametrize("backend", decisions.BACKENDS)
def test_decision_and_policy_damage_is_detected_and_never_applied(seed: int, backend: str) -> None:
    if backend == "postgres":
        pytest.importorskip("psycopg", reason="pip install '.[postgres]' for the PostgreSQL soak")
    n = len(decisions.KINDS) * 3 * size(1, 3)
    # pytest's own folders are private to root; the second operator (nobody) must reach the store.
    work = Path(tempfile.mkdtemp(prefix="phasegate-decisions-"))
    os.chmod(work, 0o777)
    try:
        cases = decisions.soak(n, seed, work / "soak", backend=backend, log=lambda s: None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad = [f"{c.kind} keyed={c.keyed} forged={c.forged}: {'; '.join(c.notes)}" for c in cases if not c.ok]
    assert not bad, f"{replay_hint(seed)}\n" + "\n".join(bad) + "\n" + decisions.summary(cases)
    assert {(c.kind, c.keyed, c.forged) for c in cases} == {
        (k, keyed, forged) for k in decisions.KINDS for keyed, forged in ((False, False), (True, False), (True, True))
    }
