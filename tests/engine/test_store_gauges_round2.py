"""`phasegate metrics`' round-2 gauges, read by scraping a real server over a
real store: the oldest waiting run by wait kind, overdue timers, each worker's
heartbeat age (a worker killed with SIGKILL goes stale), the backlog of runs a
worker could take, busy workers, and the version serving."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from engine_harness import HERE_WORKFLOWS, Harness

from tests.support.waiting import until

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")
from test_metrics import Served, value  # noqa: E402

WAITS = """
from pydantic import BaseModel

from phasegate import Workflow

wf = Workflow("waits")


class Ok(BaseModel):
    ok: bool


@wf.phase()
def hold(ctx) -> str:
    if ctx.inputs.get("ask"):
        return str(ctx.ask("go", "Go on?", Ok).ok)
    ctx.sleep("later", 3600)
    return "woke"
"""


def test_the_round_two_gauges(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    (tmp_path / "waits.py").write_text(WAITS)
    target = f"{tmp_path / 'waits.py'}:wf"
    assert h.cli("run", target, "--run-id", "a1", "--input", '{"ask": true}').returncode == 5  # waiting

    # A worker that beats every 0.2 s, killed with SIGKILL (its row says running).
    dead = Served(["worker", "--metrics", "127.0.0.1:0", "--heartbeat", "0.2", "--poll", "30", "--db", h.target], h.env)
    until(lambda: h.cli("workers", "--json").stdout.count('"alive": true') == 1, "the worker's heartbeat")
    os.kill(dead.proc.pid, signal.SIGKILL)
    dead.proc.wait(timeout=30)
    # Its last heartbeat ten minutes ago: the age must say so, not merely be a number.
    ((dead_id,),) = h.sql("SELECT worker_id FROM phasegate_workers")
    h.sql("UPDATE phasegate_workers SET last_seen = ? WHERE worker_id = ?", (time.time() - 600, dead_id))
    # A worker stopped cleanly is listed by the store but is no longer a worker to watch.
    gone = Served(["worker", "--metrics", "127.0.0.1:0", "--heartbeat", "0.2", "--poll", "30", "--db", h.target], h.env)
    until(lambda: h.cli("workers", "--json").stdout.count('"alive": true') == 1, "the second worker's heartbeat")
    assert gone.stop() == 0, gone.lines
    assert len(h.sql("SELECT worker_id FROM phasegate_workers")) == 2

    assert h.cli("run", target, "--run-id", "t1", "--input", "{}").returncode == 5
    assert h.status("t1")["status"] == "waiting" and h.status("a1")["status"] == "waiting"
    # t1's timer came due two minutes ago and no worker woke it: it is overdue, and ready.
    past = time.time() - 120
    h.sql("UPDATE phasegate_runs SET wake_at = ?, updated_at = ? WHERE run_id = 't1'", (past, past - 3600))

    gauges = Served(["metrics", "--listen", "127.0.0.1:0", "--db", h.target], h.env)
    try:
        m = until(
            lambda: (s := gauges.scrape()) and any(k[0] == "phasegate_worker_heartbeat_age_seconds" for k in s) and s,
            "the dead worker's heartbeat age",
        )
    finally:
        assert gauges.stop() == 0, gauges.lines
    (age_key,) = [k for k in m if k[0] == "phasegate_worker_heartbeat_age_seconds"]
    assert dict(age_key[1]) == {"worker": dead_id}, age_key
    assert m[age_key] >= 600
    assert value(m, "phasegate_workers_alive") == 0
    assert value(m, "phasegate_worker_busy") == 0
    assert value(m, "phasegate_build_info", version=_version()) == 1
    assert value(m, "phasegate_timers_overdue") == 1
    assert value(m, "phasegate_oldest_waiting_seconds", kind="timer") >= 3600
    assert value(m, "phasegate_runs_ready") == 1
    assert value(m, "phasegate_oldest_waiting_seconds", kind="answer") > 0
    assert value(m, "phasegate_oldest_waiting_seconds", kind="retry_later") == 0
    assert value(m, "phasegate_runs_waiting_for_answer") == 1


def test_a_busy_worker_is_counted(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    # Killed before its first charge: a worker resumes it, each charge slow.
    assert h.run("c1", kill="start:charge").killed
    env = {**h.env, "PHASEGATE_TEST_SLOW": "1"}
    gauges = Served(["metrics", "--listen", "127.0.0.1:0", "--db", h.target], h.env)
    worker = Served(
        ["worker", "--metrics", "127.0.0.1:0", "--heartbeat", "0.2", "--poll", "0.2", "--db", h.target], env
    )
    try:
        busy = until(lambda: (s := gauges.scrape()) and value(s, "phasegate_worker_busy") == 1 and s, "a busy worker")
        assert value(busy, "phasegate_workers_alive") == 1
        until(lambda: h.status("c1")["status"] == "completed", "the run to complete", timeout=60)
        idle = until(lambda: (s := gauges.scrape()) and value(s, "phasegate_worker_busy") == 0 and s, "idle again")
        assert value(idle, "phasegate_runs_ready") == 0
    finally:
        codes = [worker.stop(), gauges.stop()]
    assert codes == [0, 0], (worker.lines, gauges.lines)


def _version() -> str:
    from phasegate.observe.gauges import build_version

    return build_version()


def test_every_labelled_counter_is_served_at_zero_from_the_start(tmp_path: Path) -> None:
    """A worker started on a store that knows two workflows serves each
    workflow's series of every labelled counter, and every `outcome` and
    `answer` value, at 0 before anything happens: `increase()` sees the first event."""
    from phasegate.observe.metrics import ANSWERS, OUTCOMES

    h = Harness(tmp_path)
    assert h.run("c0").returncode == 0
    assert h.cli("run", f"{HERE_WORKFLOWS / 'flaky.py'}:wf", "--run-id", "f0").returncode == 1
    worker = Served(["worker", "--metrics", "127.0.0.1:0", "--poll", "30", "--db", h.target], h.env)
    by_workflow = (
        "phasegate_run_attempts_total",
        "phasegate_runs_resumed_total",
        "phasegate_effects_performed_total",
        "phasegate_effects_in_doubt_total",
        "phasegate_steps_saved_total",
        "phasegate_lease_takeovers_total",
    )
    want = {(name, (("workflow", wf),)) for name in by_workflow for wf in ("test-billing", "flaky")}
    want |= {
        ("phasegate_run_attempts_ended_total", (("outcome", o), ("workflow", wf)))
        for o in OUTCOMES
        for wf in ("test-billing", "flaky")
    }
    want |= {
        ("phasegate_effects_reconciled_total", (("answer", a), ("workflow", wf)))
        for a in ANSWERS
        for wf in ("test-billing", "flaky")
    }
    # The per-phase counters too, for every phase of each workflow's runs.
    per_phase = {
        (name, (("phase", ph), ("workflow", wf)))
        for name in ("phasegate_phases_run_total", "phasegate_phases_failed_total")
        for wf, phases in (
            ("test-billing", ("load", "price", "charge", "report")),
            ("flaky", ("gather", "divide", "total")),
        )
        for ph in phases
    }
    try:
        # The endpoint serves from the process's start (store_up 0 while the
        # store is waited for); the store's workflows are told to it once the
        # worker has opened the store, before it looks for work.
        m = until(
            lambda: (s := worker.scrape()) and want | per_phase <= set(s) and s,
            "the store's workflows at 0",
            timeout=60,
        )
    finally:
        assert worker.stop() == 0, worker.lines
    assert {k: m[k] for k in want} == dict.fromkeys(want, 0.0)
    assert {k: m.get(k) for k in per_phase} == dict.fromkeys(per_phase, 0.0)
    # Every labelled counter phasegate serves is one of those.
    labelled = {k[0] for k in m if k[0].endswith("_total") and k[0].startswith("phasegate_") and k[1]}
    assert labelled <= {n for n, _ in want | per_phase}, labelled
