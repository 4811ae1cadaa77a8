"""Workers the console can see (#17): a real `phasegate worker` records its
heartbeat; `phasegate workers --json` lists it alive, not alive once its
heartbeat is older than the window (frozen with SIGSTOP) or its process is
dead (SIGKILL), and stopped after a clean exit. A version-3 store upgrades,
and old rows are pruned when a worker starts."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any, TypeVar

import pytest
from engine_harness import Harness

from phasegate import Engine
from phasegate.store.schema import SCHEMA_VERSION
from tests.support import cli
from tests.support.waiting import until

T = TypeVar("T")


def _workers(h: Harness) -> list[dict[str, Any]]:
    p = h.cli("workers", "--json")
    assert p.returncode == 0, p
    found: list[dict[str, Any]] = json.loads(p.stdout)
    return found


def _mine(h: Harness, pid: int) -> dict[str, Any] | None:
    return next((w for w in _workers(h) if w["pid"] == pid), None)


def test_a_worker_is_alive_then_not_when_frozen_or_killed(h: Harness) -> None:
    assert h.run("r1").returncode == 0  # a store with a run in it
    child = cli.start(["worker", "--db", h.target, "--heartbeat", "0.2", "--poll", "0.2"], env=h.env)
    try:
        w = until(lambda: (m := _mine(h, child.pid)) and m["alive"] and m, "the worker to be seen alive")
        assert w["state"] == "running" and w["heartbeat_seconds"] == 0.2
        assert w["alive_window_seconds"] == pytest.approx(0.6)
        assert w["jobs"] == 1 and w["resuming"] == [] and len(w["worker_id"]) > 0

        # Frozen: the process lives, its heartbeat stops; past the window it is not alive.
        os.kill(child.pid, signal.SIGSTOP)
        try:
            w = until(lambda: (m := _mine(h, child.pid)) and not m["alive"] and m, "the worker to be seen gone")
            assert w["state"] == "running" and w["seen_seconds_ago"] >= 0.5
        finally:
            os.kill(child.pid, signal.SIGCONT)
        until(lambda: (m := _mine(h, child.pid)) and m["alive"], "the worker to be seen alive")

        child.kill()  # SIGKILL: no clean exit, so it is still "running" in its row
        w = until(lambda: (m := _mine(h, child.pid)) and not m["alive"] and m, "the worker to be seen gone")
        assert w["state"] == "running"
        text = h.cli("workers")
        assert text.returncode == 0 and "0 alive of 1" in text.stdout, text
    finally:
        child.kill()


def test_a_clean_exit_marks_the_worker_stopped(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    child = cli.start(["worker", "--db", h.target, "--heartbeat", "0.2", "--poll", "0.2"], env=h.env)
    try:
        until(lambda: (m := _mine(h, child.pid)) and m["alive"], "the worker to be seen alive")
        os.kill(child.pid, signal.SIGTERM)
        assert child.wait(timeout=30).returncode == 0
    finally:
        child.kill()
    w = _mine(h, child.pid)
    assert w is not None and w["state"] == "stopped" and w["alive"] is False


@pytest.mark.sqlite_only
def test_a_version_3_store_upgrades_and_gets_the_workers_table(h: Harness) -> None:
    assert h.run("r1").returncode == 0
    con = sqlite3.connect(h.db)
    con.execute("DROP TABLE phasegate_workers")
    con.execute("UPDATE phasegate_meta SET value='3' WHERE key='schema_version'")
    con.commit()
    con.close()
    p = h.cli("workers", "--json")  # a writable open upgrades
    assert p.returncode == 0 and json.loads(p.stdout) == [], p
    assert h.sql("SELECT value FROM phasegate_meta WHERE key='schema_version'") == [(str(SCHEMA_VERSION),)]
    assert h.cli("worker", "--once").returncode == 0
    assert [w["state"] for w in _workers(h)] == ["stopped"]
    assert h.status("r1")["status"] == "completed"


@pytest.mark.sqlite_only
def test_old_and_surplus_worker_rows_are_pruned_when_a_worker_starts(h: Harness, tmp_path: Path) -> None:
    assert h.run("r1").returncode == 0
    now = time.time()
    with Engine(h.db, create=False) as eng:
        row = {"host": "elsewhere", "pid": 1, "every": 5.0, "jobs": 1, "busy_json": "[]", "handled": 0}
        # a worker last seen eight days ago, never stopped cleanly
        eng.store.workers.beat({**row, "worker_id": "old", "last_seen": now - 8 * 86400, "state": "running"})
        for i in range(60):  # sixty restarts' worth of stopped rows
            eng.store.workers.beat({**row, "worker_id": f"s{i:02d}", "last_seen": now - 3600 + i, "state": "stopped"})
    assert h.cli("worker", "--once").returncode == 0
    ids = [w["worker_id"] for w in _workers(h)]
    assert "old" not in ids
    # the 50 most recent stopped rows kept at its start, then its own
    assert len(ids) == 51 and "s10" in ids and "s09" not in ids
