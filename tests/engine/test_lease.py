"""One process at a time: a second process is told who holds the run; a dead
holder's run is `interrupted` and can be resumed at once."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import time

import pytest
from engine_harness import BILLING_FILE, spawn

from tests.support.waiting import until

HOST = socket.gethostname()


def _start_slow(h, run_id="r1"):
    """A holder that sits inside its first charge (intent committed) until killed."""
    child = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", run_id, "--input", h.inputs(idempotent=True), "--db", h.target],
        {**h.env, "PHASEGATE_TEST_SLOW": "60"},
    )
    try:
        until(
            lambda: (
                (h.backend == "postgres" or h.db.exists())
                and "start:charge" in h.trace()
                and h.sql("SELECT count(*) FROM phasegate_effects WHERE run_id=?", (run_id,)) == [(1,)]
            ),
            "the holder's first charge",
            timeout=30,
            ignoring=(Exception,),  # the store is still being created (either backend)
        )
    except AssertionError:
        raise AssertionError(f"the holder never reached its first charge: {child.kill()}") from None
    assert child.alive(), child.result
    return child


def test_second_process_is_refused_naming_the_holder_then_dead_holder_is_resumed(h):
    child = _start_slow(h)
    try:
        st = h.status("r1")
        assert st["status"] == "running"
        assert st["lease"]["holder"] == f"{HOST}:{child.pid}" and st["lease"]["alive"] is True
        before = h.sql("SELECT output_state FROM phasegate_checkpoints WHERE run_id='r1'")

        p = h.resume("r1")
        line = h.one_line_error(p, 4)
        assert f"held by {HOST}:{child.pid}" in line
        p = h.run("r1", idempotent=True)
        assert p.returncode == 4 and f"{HOST}:{child.pid}" in p.stderr

        # No decision and no pruning under a live run.
        p = h.decide("r1", "reset", reason="while it runs")
        assert "is running" in h.one_line_error(p, 2)
        p = h.cli("prune", "--apply")
        assert p.returncode == 0 and "0 pruned" in p.stdout
        assert h.sql("SELECT output_state FROM phasegate_checkpoints WHERE run_id='r1'") == before
        assert child.alive()
    finally:
        dead = child.kill()
    assert dead.killed

    # Same host, dead pid: interrupted at once, without waiting for the lease to lapse.
    st = h.status("r1")
    assert st["status"] == "interrupted"
    assert st["lease"]["alive"] is False
    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:charge", "start:report"]
    keys = h.charge_keys()
    assert len(keys) == 3 and len(set(keys)) == 3
    assert h.status("r1")["lease"] is None


def test_a_holder_on_another_host_counts_until_its_lease_expires(h):
    assert h.run("r1", kill="start:report").killed
    future = time.time() + 600
    h.sql(
        "UPDATE phasegate_runs SET lease_owner='elsewhere:4242:abcd', lease_host='elsewhere', lease_pid=4242,"
        " lease_expires_at=? WHERE run_id='r1'",
        (future,),
    )
    assert h.status("r1")["status"] == "running"
    p = h.resume("r1")
    assert "held by elsewhere:4242" in h.one_line_error(p, 4)

    h.sql("UPDATE phasegate_runs SET lease_expires_at=? WHERE run_id='r1'", (time.time() - 1,))
    assert h.status("r1")["status"] == "interrupted"
    assert h.resume("r1").returncode == 0


def test_status_list_counts_a_dead_holder_as_interrupted(h):
    assert h.run("r1", kill="start:price").killed
    assert h.run("r2").returncode == 0
    p = h.cli("status")
    lines = {ln.split()[0]: ln for ln in p.stdout.splitlines()}
    assert "interrupted" in lines["r1"] and "completed" in lines["r2"]
    runs = {r["run_id"]: r["status"] for r in json.loads(h.cli("status", "--json").stdout)}
    assert runs == {"r1": "interrupted", "r2": "completed"}


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] == "T"


def _freeze_outside_a_write(pid: int, db) -> None:
    """SIGSTOP the process at a moment it holds no write lock: a process frozen
    inside a write transaction blocks every writer (that is SQLite, not the
    engine), which is not what this test is about."""
    for _ in range(500):
        os.kill(pid, signal.SIGSTOP)
        until(lambda: _stopped(pid), "the holder to stop", timeout=10)
        con = sqlite3.connect(db, timeout=0.05, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            pass
        finally:
            con.close()
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.01)  # sleep: let the thawed holder run on, out of its write, before it is frozen again
    raise AssertionError("the holder never let go of the write lock")


@pytest.mark.sqlite_only
def test_a_holder_that_lost_its_lease_cannot_record_anything(h):
    """A holder frozen past its lease (SIGSTOP: a stalled VM, a long GC) is
    taken over; when it thaws, its writes are fenced off."""
    child = spawn(
        ["run", f"{BILLING_FILE}:wf", "--run-id", "r1", "--input", h.inputs(idempotent=True), "--db", str(h.db)],
        {**h.env, "PHASEGATE_TEST_SLOW": "1", "PHASEGATE_LEASE_SECONDS": "0.3"},
    )
    until(
        lambda: h.db.exists() and h.sql("SELECT count(*) FROM phasegate_effects") == [(1,)],
        "the holder's first charge",
        timeout=30,
        ignoring=(sqlite3.Error,),  # the store is still being created
    )
    _freeze_outside_a_write(child.pid, h.db)
    try:
        # Alive on this host past its lease: stalled, not dead. Taking it over
        # needs --force, which says what it risks.
        until(lambda: h.status("r1")["status"] == "stalled", "r1 to be seen stalled", timeout=30)
        assert h.status("r1")["lease"]["state"] == "stalled"
        line = h.one_line_error(h.resume("r1"), 4)
        assert "stalled" in line and "--force" in line and "twice" in line
        p = h.cli("resume", "r1", "--force")  # takes the run over, re-calls the same keys
        assert p.returncode == 0, p
        after = h.dump()
    finally:
        os.kill(child.pid, signal.SIGCONT)
    res = child.wait()
    assert res.returncode == 4, res
    assert "lease lost" in res.stderr
    assert h.dump() == after  # the thawed holder changed nothing
    keys = h.charge_keys()
    assert len(set(keys)) == 3 and h.status("r1")["status"] == "completed"
