"""Corruption fuzzing at CI size: every kind of damage once, on copies of a
store holding a completed run and three stopped at different points. Each
resume must end as `integrity` before any phase runs, a clear exit 2, or a
correct resume; `status` and `verify` must never crash."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.support.seeds import replay_hint
from tests.torture import corrupt

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)"),
    # One xdist worker for the module: its fuzzer (a store to damage) is module-scoped.
    pytest.mark.xdist_group("torture-corruption"),
]


@pytest.fixture(scope="module")
def fuzzer(tmp_path_factory: pytest.TempPathFactory) -> corrupt.Fuzzer:
    return corrupt.Fuzzer(tmp_path_factory.mktemp("fuzz"))


def test_every_kind_of_damage_ends_safely(fuzzer: corrupt.Fuzzer, seed: int) -> None:
    rng = random.Random(seed)
    reports = [
        fuzzer.case(n, random.Random(rng.getrandbits(64)), kind) for n, kind in enumerate(sorted(fuzzer.damages()))
    ]
    lines = [f"{r.kind:<20} {r.detail[:70]:<70} {r.outcomes}" for r in reports]
    bad = [f"{r.kind}: {r.detail}: {v}" for r in reports for v in r.violations]
    assert not bad, f"{replay_hint(seed)}\n" + "\n".join(bad + lines)
    outcomes = {o for r in reports for o in r.outcomes.values()}
    # The fuzzer really does reach all three endings.
    assert {"integrity", "unusable", "resumed"} <= outcomes, lines


@pytest.mark.parametrize("kind", ["schema-future", "schema-garbage"])
def test_a_store_from_the_future_is_integrity_for_every_run(fuzzer: corrupt.Fuzzer, kind: str) -> None:
    rep = fuzzer.case(100, random.Random(1), kind)
    assert not rep.violations, rep.violations
    assert set(rep.outcomes.values()) == {"integrity"}, rep.outcomes


def test_a_wal_from_another_database_is_refused(fuzzer: corrupt.Fuzzer) -> None:
    rep = fuzzer.case(101, random.Random(2), "foreign-wal")
    assert not rep.violations, rep.violations
    assert set(rep.outcomes.values()) <= {"integrity", "unusable"}, rep.outcomes


def test_damaged_inputs_stop_the_run_before_it_parses_them(fuzzer: corrupt.Fuzzer) -> None:
    """Found by the fuzzer: stored inputs were never checked against their hash."""
    for n in range(2):
        rep = fuzzer.case(200 + n, random.Random(n), "flip-inputs")
        assert not rep.violations, rep.violations
        damaged = rep.detail.split(" of ", 1)[1].split(":", 1)[0]
        assert rep.outcomes[damaged] in ("integrity", "unusable"), (rep.detail, rep.outcomes)


def test_a_deleted_effect_record_of_an_open_phase_is_detected(fuzzer: corrupt.Fuzzer, tmp_path: Path) -> None:
    import shutil
    import sqlite3
    from contextlib import closing

    folder = tmp_path / "case"
    shutil.copytree(fuzzer.base, folder)
    shutil.rmtree(fuzzer.world, ignore_errors=True)
    shutil.copytree(fuzzer.pristine, fuzzer.world)
    db = folder / "store.db"
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        conn.execute("DELETE FROM phasegate_effects WHERE key = 'mid-charge/charge/charge:0'")
    rep = corrupt.CaseReport(0, "delete-effect", "effects row of mid-charge/charge/charge:0 deleted")
    from tests.torture import proc

    r = proc.run(["resume", "mid-charge", "--db", str(db)])
    outcome = fuzzer._classify(folder, db, "mid-charge", r, [], rep)
    assert outcome in ("integrity", "unusable"), (outcome, rep.known)
