"""A worker, `metrics` and `watch` started on an empty folder (the
PostgreSQL guide's order: the long-lived processes first) wait for the store,
saying so once, and start work when the first run creates it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engine_harness import HERE_WORKFLOWS, Harness

from tests.support.waiting import until

pytest.importorskip("prometheus_client", reason="the metrics extra is not installed")
from test_metrics import Served, value  # noqa: E402

FLAKY = f"{HERE_WORKFLOWS / 'flaky.py'}:wf"


def _no_store(h: Harness) -> bool:
    if h.backend == "sqlite":
        return not h.db.exists()
    return h.sql("SELECT to_regclass('phasegate_runs')")[0][0] is None


def test_worker_metrics_and_watch_wait_for_the_store_then_work(h: Harness) -> None:
    """On SQLite (no file) and on PostgreSQL (a schema without tables): the guide's order."""
    assert _no_store(h)
    alerts = h.tmp / "alerts.jsonl"
    worker = Served(["worker", "--metrics", "127.0.0.1:0", "--poll", "0.2", "--db", h.target], h.env)
    gauges = Served(["metrics", "--listen", "127.0.0.1:0", "--db", h.target], h.env)
    watch = Served(
        ["watch", "--exec", f"cat >> {alerts}", "--metrics", "127.0.0.1:0", "--poll", "0.2", "--db", h.target], h.env
    )
    try:
        for p, name in ((worker, "worker"), (watch, "watch")):
            until(lambda p=p: any("waiting for it" in line for line in p.lines), f"the {name} to say it waits")
        down = gauges.scrape()
        assert value(down, "phasegate_store_up") == 0
        assert value(down, "phasegate_build_info", version=_version()) == 1
        until(lambda: any("store down (phasegate_store_up 0)" in line for line in gauges.lines), "why it is down")
        gauges.scrape()
        # Each says it once, however long it waits.
        assert sum("store down" in line for line in gauges.lines) == 1, gauges.lines
        assert sum("waiting for it" in line for line in worker.lines) == 1, worker.lines
        assert _no_store(h), "a waiting process created the store"
        for p in (worker, gauges, watch):
            assert p.proc.poll() is None, p.lines

        # The first runs create the store: one killed mid-charge (the worker
        # picks it up), one that fails (the watch announces it).
        assert h.run("d1", kill="after:charge:inv-1").killed
        assert h.cli("run", FLAKY, "--run-id", "f1").returncode == 1
        until(lambda: h.status("d1")["status"] == "blocked", "the worker to resume d1")
        until(lambda: alerts.exists() and "f1" in alerts.read_text(), "the watch to announce f1")
        up = until(lambda: (s := gauges.scrape()) and value(s, "phasegate_store_up") == 1 and s, "store_up 1")
        assert value(up, "phasegate_runs", status="failed") == 1
        m = worker.scrape()
        assert value(m, "phasegate_effects_in_doubt_total", workflow="test-billing") == 1
    finally:
        codes = [p.stop() for p in (worker, gauges, watch)]
    assert codes == [0, 0, 0], (worker.lines, gauges.lines, watch.lines)
    text, events, at = alerts.read_text(), [], 0
    while at < len(text):
        got, at = json.JSONDecoder().raw_decode(text, at)
        events.append(got)
    assert "f1" in {e["run_id"] for e in events}, events


def test_a_stop_while_waiting_exits_cleanly(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    worker = Served(["worker", "--metrics", "127.0.0.1:0", "--db", h.target], h.env)
    until(lambda: any("waiting for it" in line for line in worker.lines), "the worker to say it waits")
    assert worker.stop() == 0, worker.lines
    assert not h.db.exists()


def test_a_one_pass_worker_still_refuses_a_missing_store(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    p = h.cli("worker", "--once")
    assert p.returncode == 2 and "no phasegate database" in p.stderr, p
    assert "Traceback" not in p.stderr


def _version() -> str:
    from phasegate.observe.gauges import build_version

    return build_version()
