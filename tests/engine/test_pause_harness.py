"""The pause harness (#16, "Done means"): a holder is frozen with SIGSTOP at
a chosen point (after an effect's intent, inside a phase, inside a
checkpoint's commit) with a 1 s lease, an operator acts or does not, the
holder is continued with SIGCONT, and the run is finished the way the README
says. On both backends, afterwards: no effect reached the gateway twice, no
decision was undone, and `verify` is clean."""

from __future__ import annotations

import json

import pytest
from engine_harness import BILLING_FILE, spawn

from tests.support.pause import thaw, wait_for, wait_stopped

LEASE = {"PHASEGATE_LEASE_SECONDS": "1"}
POINTS = ["after-intent:charge:inv-1", "in-phase:charge", "in-commit:price"]
SCENARIOS = ["thaw-late", "takeover", "reset"]


def finish(h, run_id: str = "r1") -> None:
    """Resume until completed, answering each in-doubt charge from the
    gateway's own ledger as the triage guide says."""
    for _ in range(6):
        p = h.resume(run_id)
        if p.returncode == 0:
            return
        assert p.returncode == 3 and "Traceback" not in p.stderr, p
        st = h.status(run_id)
        assert st["blocked"] and all(b["kind"] == "in_doubt_effect" for b in st["blocked"]), st["blocked"]
        charged = {c["key"]: c for c in h.charges()}
        for b in st["blocked"]:
            key = b["effect"]
            if key in charged:
                res = json.dumps({"charge_id": charged[key]["charge_id"], "amount": charged[key]["amount"]})
                d = h.decide(run_id, "confirm_effect", "--effect", key, "--result", res)
            else:
                d = h.decide(run_id, "retry_effect", "--effect", key)
            assert d.returncode == 0, d
    raise AssertionError(f"{run_id} did not complete: {h.status(run_id)}")


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("point", POINTS)
def test_a_frozen_holder_changes_nothing_after_it_lost_its_lease(h, point: str, scenario: str) -> None:
    # Frozen inside its commit, a SQLite holder keeps the write lock. On
    # PostgreSQL the checkpoint of a phase with no effect completion waiting
    # (`price`) is one statement that commits itself, and the holder freezes
    # before sending it, holding nothing: the operator goes ahead, and the
    # statement finds the lease gone when it thaws.
    holds_lock = point.startswith("in-commit") and h.backend == "sqlite"
    # With a 1 s lease a child starved on a loaded machine can lose its lease
    # before it reaches the point (exit 4, nothing recorded): the scenario was
    # not set up, so it is set up again, from where that child left the run.
    for _ in range(3):
        child = spawn(
            ["run", f"{BILLING_FILE}:wf", "--run-id", "r1", "--input", h.inputs(), "--db", h.target],
            {**h.env, **LEASE, "PHASEGATE_PAUSE_AT": point},
        )
        if wait_stopped(child.pid, child.alive) or child.wait().returncode != 4:
            break
    resets = 0
    try:
        assert wait_stopped(child.pid, child.alive), child.result
        wait_for(lambda: h.status("r1")["status"] == "stalled", what="stalled")
        if scenario == "takeover":
            p = h.cli("resume", "r1", "--force", env=LEASE)
            if holds_lock:
                # Its commit holds SQLite's write lock: the takeover cannot
                # start, and says so in one line.
                assert p.returncode in (2, 4) and "Traceback" not in p.stderr, p
            else:
                assert p.returncode in (0, 3), p
        elif scenario == "reset":
            p = h.decide("r1", "reset", env=LEASE)
            if holds_lock:
                assert p.returncode == 2 and "locked" in p.stderr, p  # one line, nothing recorded
            else:
                assert p.returncode == 0, p
                resets = 1
    finally:
        thaw(child.pid)
    res = child.wait()
    # Thawed past its lease, the holder stops at its next write: "lease lost".
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    if resets:
        st = h.status("r1")
        assert st["status"] == "reset" and st["epoch"] == 1, st  # the reset was not undone
    finish(h)
    st = h.status("r1")
    assert st["status"] == "completed" and st["epoch"] == resets
    assert [d["state"] for d in st["decisions"] if d["action"] == "reset"] == ["applied"] * resets
    keys = h.charge_keys()
    assert sorted(keys) == [f"r1/charge/charge:inv-{i}" for i in range(3)], keys  # each charge exactly once
    assert h.cli("verify").returncode == 0
