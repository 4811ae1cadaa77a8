"""Trust round 3 (#38), finding 3 / What to build 2: a run's status and hold
are checked against its sealed history. One UPDATE of a run row (sqlite3,
psql) un-cancels or un-pauses nothing: `verify` reports it and the start
sequence blocks on it before anything runs, with a seal key and without."""

from __future__ import annotations

import json
import os

import pytest
from engine_harness import Harness

KEY_ENV = "PHASEGATE_SEAL_KEY_FILE"


@pytest.fixture(params=["plain", "keyed"])
def env(request: pytest.FixtureRequest, h: Harness) -> dict[str, str]:
    if request.param == "plain":
        return {}
    key = h.tmp / "seal.key"
    key.write_bytes(os.urandom(32).hex().encode())
    key.chmod(0o600)
    return {KEY_ENV: str(key)}


def _row_damage(h: Harness, env: dict[str, str]) -> list[str]:
    v = h.cli("verify", "--json", env=env)
    assert v.returncode == 3, v
    (r,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    return [d["detail"] for d in r["decisions"] if d["problem"] == "run_row"]


def _stopped(h: Harness, env: dict[str, str]) -> None:
    assert h.run("r1", kill="start:charge", env=env).killed
    h.clear_trace()


def test_a_cancelled_run_is_not_uncancelled_by_editing_its_row(h: Harness, env: dict[str, str]) -> None:
    _stopped(h, env)
    assert h.cli("cancel", "r1", "--reason", "customer withdrew", env=env).returncode == 0
    assert h.status("r1")["status"] == "cancelled"
    assert h.cli("verify", env=env).returncode == 0
    h.sql("UPDATE phasegate_runs SET status = 'interrupted', held_json = NULL WHERE run_id = 'r1'")
    assert any("cancelled run is final" in d for d in _row_damage(h, env))
    p = h.resume("r1", env=env)
    assert p.returncode == 3 and "integrity" in p.stdout, p
    assert h.trace() == [] and h.charges() == []
    p = h.cli("worker", "--once", env=env)
    assert h.trace() == [] and h.charges() == []


def test_a_paused_run_is_not_unpaused_by_editing_its_row(h: Harness, env: dict[str, str]) -> None:
    _stopped(h, env)
    assert h.cli("pause", "r1", "--reason", "look first", env=env).returncode == 0
    h.sql("UPDATE phasegate_runs SET status = 'interrupted', held_json = NULL WHERE run_id = 'r1'")
    assert any("is a pause" in d for d in _row_damage(h, env))
    p = h.resume("r1", env=env)
    assert p.returncode == 3 and "integrity" in p.stdout, p
    assert h.trace() == [] and h.charges() == []


def test_a_hold_must_name_the_sealed_decision_it_rests_on(h: Harness, env: dict[str, str]) -> None:
    _stopped(h, env)
    forged = {"action": "pause", "state": "in_force", "by": "mallory", "reason": "x", "at": 1.0, "decision": 99,
              "from": {"status": "running"}}  # fmt: skip
    h.sql("UPDATE phasegate_runs SET status = 'paused', held_json = ? WHERE run_id = 'r1'", (json.dumps(forged),))
    assert any("no decision of its own explains" in d for d in _row_damage(h, env))


def test_a_row_saying_cancelled_without_a_cancel_is_damage(h: Harness, env: dict[str, str]) -> None:
    _stopped(h, env)
    h.sql("UPDATE phasegate_runs SET status = 'cancelled' WHERE run_id = 'r1'")
    assert any("no applied cancel" in d for d in _row_damage(h, env))


def test_pause_unpause_and_cancel_as_phasegate_records_them_verify(h: Harness, env: dict[str, str]) -> None:
    _stopped(h, env)
    for args in (("pause", "r1"), ("unpause", "r1"), ("pause", "r1"), ("cancel", "r1")):
        assert h.cli(*args, "--reason", "ops", env=env).returncode == 0
        v = h.cli("verify", env=env)
        assert v.returncode == 0, (args, v)
