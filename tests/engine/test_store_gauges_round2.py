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
from engine_harness import Harness

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
    assert m[age_key] >= 0 and dict(age_key[1])["worker"]
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
