"""Fencing under pauses (#16, findings 1-3): a holder frozen with SIGSTOP at
an exact point (`PHASEGATE_PAUSE_AT`), its lease lapsing, an operator acting
through the command line, then the holder continued with SIGCONT. Nothing it
does after it thaws may reach the gateway or the store."""

from __future__ import annotations

import json
import socket

import pytest
from engine_harness import BILLING_FILE, HERE_WORKFLOWS, spawn

from tests.support.cli import Child
from tests.support.pause import thaw, wait_for, wait_stopped

HOST = socket.gethostname()
LEASE = "1"


def _frozen(h, point: str, run_id: str = "r1", *, idempotent: bool = False, extra: dict | None = None) -> Child:
    """A holder of `run_id` on the billing workflow, frozen at `point` and
    shown as stalled (its 1 s lease lapsed, its pid alive on this host)."""
    child = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", run_id, "--input", h.inputs(idempotent=idempotent), "--db", h.target],
        {**h.env, "PHASEGATE_PAUSE_AT": point, "PHASEGATE_LEASE_SECONDS": LEASE, **(extra or {})},
    )
    try:
        assert wait_stopped(child.pid, child.alive), child.result
        wait_for(lambda: h.status(run_id)["status"] == "stalled", what="stalled")
    except BaseException:
        thaw(child.pid)
        child.kill()
        raise
    return child


def test_finding_1_a_frozen_holder_never_charges_after_the_operator_retried(h):
    child = _frozen(h, "after-intent:charge:inv-0")
    try:
        assert h.charge_keys() == []  # the intent is committed, the gateway not yet called
        st = h.status("r1")
        assert st["lease"]["state"] == "stalled" and st["lease"]["holder"] == f"{HOST}:{child.pid}"
        assert "died" not in st["attention"] and "stalled" in st["attention"]
        text = h.cli("status", "r1").stdout
        assert "status    stalled" in text and "died" not in text
        listing = h.cli("status").stdout
        assert "stalled" in listing and "died" not in listing

        # The README's in-doubt procedure, against a stalled holder: refused
        # without --force, saying what it risks; the dry run refuses the same.
        p = h.decide("r1", "retry_effect", "--effect", "charge:inv-0")
        line = h.one_line_error(p, 4)
        assert "stalled" in line and "--force" in line
        assert "stalled" in h.one_line_error(h.decide("r1", "retry_effect", "--effect", "charge:inv-0", "--dry-run"), 4)
        assert h.sql("SELECT count(*) FROM phasegate_decisions") == [(0,)]

        p = h.decide("r1", "retry_effect", "--effect", "charge:inv-0", "--force")
        assert p.returncode == 0, p
        assert h.status("r1")["lease"] is None  # the decision revoked the frozen holder's lease
        p = h.resume("r1")
        assert p.returncode == 0, p
        assert h.charge_keys() == ["r1/charge/charge:inv-0", "r1/charge/charge:inv-1", "r1/charge/charge:inv-2"]
    finally:
        thaw(child.pid)
    res = child.wait()
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    # The thawed holder re-checked its lease before calling the gateway.
    keys = h.charge_keys()
    assert len(keys) == 3 and len(set(keys)) == 3, keys
    assert h.status("r1")["status"] == "completed"
    assert h.cli("verify").returncode == 0


def test_finding_1_a_forced_takeover_blocks_on_the_intent_and_the_thawed_holder_calls_nothing(h):
    child = _frozen(h, "after-intent:charge:inv-0")
    try:
        assert "stalled" in h.one_line_error(h.resume("r1"), 4)
        p = h.cli("resume", "r1", "--force")
        assert p.returncode == 3 and "in_doubt_effect" in p.stdout, p  # not charged twice: asked
    finally:
        thaw(child.pid)
    res = child.wait()
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    assert h.charge_keys() == []
    assert h.status("r1")["status"] == "blocked"


def test_finding_2_a_reset_is_not_undone_by_the_holder_it_stalled(h):
    child = _frozen(h, "in-phase:report")
    try:
        p = h.decide("r1", "reset")
        assert p.returncode == 0, p
        before = h.status("r1")
        assert before["status"] == "reset" and before["epoch"] == 1 and before["lease"] is None
    finally:
        thaw(child.pid)
    res = child.wait()
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    st = h.status("r1")
    assert st["status"] == "reset" and st["epoch"] == 1, st
    assert h.cli("verify").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.cli("verify").returncode == 0
    assert len(h.charge_keys()) == 3  # the reset run kept the charges already made


def test_a_heartbeat_does_not_bring_an_expired_lease_back(h):
    """Nobody acted while it was frozen: the thawed holder still may not go
    on with an expired lease (an operator may be acting on what they saw)."""
    child = _frozen(h, "in-phase:charge")
    thaw(child.pid)
    res = child.wait()
    assert res.returncode == 4 and "lease lost" in res.stderr, res
    assert h.charge_keys() == []
    st = h.status("r1")
    assert st["status"] == "interrupted" and st["lease"] is None  # it gave its lease up on the way out
    assert h.resume("r1").returncode == 0
    assert len(set(h.charge_keys())) == 3 == len(h.charge_keys())


@pytest.mark.sqlite_only
def test_finding_3_a_frozen_sqlite_writer_makes_live_runs_look_stalled_not_dead(h):
    """One writer frozen inside its commit holds SQLite's write lock. The
    others wait a third of their lease at most, and while their leases lapse
    they show as stalled: nothing treats them as dead and takes them over."""
    slow = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", "a", "--input", h.inputs(idempotent=True), "--db", h.target],
        {**h.env, "PHASEGATE_LEASE_SECONDS": LEASE, "PHASEGATE_TEST_SLOW": "5"},
    )
    # `a` is inside its first charge's call (intent committed), writing nothing for a while.
    wait_for(lambda: h.sql("SELECT count(*) FROM phasegate_effects WHERE run_id='a'") == [(1,)], what="a charging")
    frozen = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", "b", "--input", h.inputs(idempotent=True), "--db", h.target],
        {**h.env, "PHASEGATE_LEASE_SECONDS": LEASE, "PHASEGATE_PAUSE_AT": "in-commit:load"},
    )
    try:
        assert wait_stopped(frozen.pid, frozen.alive), frozen.result
        # a's heartbeat cannot write behind the frozen lock, so its lease
        # lapses; a is alive, so it is stalled, never "its process died".
        wait_for(lambda: h.status("a")["status"] != "running", what="a's lease lapsing")
        assert h.status("a")["status"] == "stalled" and slow.alive()
        # A writer behind the frozen lock gives up (one line, exit 2) instead
        # of waiting out the old 60 s; a takeover is refused either way.
        p = h.cli("resume", "a", env={"PHASEGATE_LEASE_SECONDS": LEASE})
        assert p.returncode in (2, 4) and "Traceback" not in p.stderr, p
        assert slow.alive(), slow.result
    finally:
        thaw(frozen.pid)
    # Each ends cleanly: done, its lease lost (4), or a write that gave up
    # waiting for the lock (2); never a traceback, always resumable.
    for child in (frozen, slow):
        res = child.wait()
        assert res.returncode in (0, 2, 4) and "Traceback" not in res.stderr, res
    for rid in ("a", "b"):
        if h.status(rid)["status"] != "completed":
            p = h.resume(rid)
            assert p.returncode == 0, p
    keys = h.charge_keys()
    assert sorted(set(keys)) == sorted(f"{r}/charge/charge:inv-{i}" for r in "ab" for i in range(3))
    assert h.cli("verify").returncode == 0


def test_an_effect_that_declares_fence_gets_a_token_that_grows_with_each_attempt(h):
    """The README's pattern: `fn(key, fence)`; the target refuses a token
    older than one it has seen, so a stale holder's late call is rejected."""
    target = h.tmp / "target.jsonl"
    wf = f"{HERE_WORKFLOWS / 'fenced.py'}:wf"
    inputs = json.dumps({"target": str(target)})
    p = h.cli("run", wf, "--run-id", "r1", "--input", inputs, env={"PHASEGATE_TEST_KILL_AT": "after-send"})
    assert p.killed, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    sent = [json.loads(line) for line in target.read_text().splitlines()]
    assert [(s["key"], s["epoch"], s["attempt"]) for s in sent] == [("r1/send/notify", 0, 1), ("r1/send/notify", 0, 2)]
    out = {o["phase"]: o for o in h.status("r1")["outputs"]}
    assert out["send"]["verified"]
    # A late call with the first attempt's token is refused by the target itself.
    from importlib import util

    spec = util.spec_from_file_location("fenced_wf", HERE_WORKFLOWS / "fenced.py")
    assert spec and spec.loader
    mod = util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(mod.StaleRequest):
        mod.target_send(target, "r1/send/notify", 0, 1)
