"""Issue #29, finding 11: PostgreSQL drops the workers' connections again
and again (`pg_terminate_backend` every 0.15 s, as a flapping failover does)
while two workers drain the runs. Each drop is one line in a worker's log,
never a traceback; the workers go on, and every run ends completed or
stopped for a resume, with no charge made twice."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg

from tests.conftest import BILLING, cli
from tests.postgres.test_reconnect import _finish, _statuses
from tests.support import cli as support
from tests.support.pause import wait_for

N_RUNS = 16
APP = "pgdrop"


def _progress(con: psycopg.Connection) -> int:
    """How many durable writes the workers have made: steps and checkpoints."""
    row = con.execute(
        "SELECT (SELECT count(*) FROM phasegate_steps) + (SELECT count(*) FROM phasegate_checkpoints)"
    ).fetchone()
    return int(row[0]) if row else 0


def _terminate_loop(url: str, app: str, stop: threading.Event, every: float = 0.15) -> list[int]:
    """Drop the workers' connections every `every` seconds until `stop`,
    but never twice before the workers made one durable write in between.

    A fixed timer alone starves a loaded machine: when a reconnect and a
    phase take longer than `every`, no run ever finishes. Waiting for
    progress keeps the drops frequent on a fast machine and the test live
    on a slow one."""
    dropped: list[int] = []
    with psycopg.connect(url, autocommit=True) as con:
        while not stop.wait(every):
            rows = con.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s",
                (app + "%",),
            ).fetchall()
            dropped.append(len(rows))
            seen = _progress(con)
            while not stop.is_set() and _progress(con) <= seen:
                stop.wait(0.05)
    return dropped


def test_two_workers_under_dropped_connections_log_one_line_each(pg_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    inputs = json.dumps({"ledger": str(ledger)})
    for i in range(N_RUNS):
        p = cli(
            "run", BILLING, "--run-id", f"r{i:02d}", "--input", inputs, "--db", pg_url,
            env={"PHASEGATE_TEST_KILL_AT": "start:load"},
        )  # fmt: skip
        assert p.killed, p
    app = f"{APP}-{os.getpid()}-{pg_url.rsplit('%3D', 1)[-1]}"
    env = {"PHASEGATE_TEST_SLOW": "0.05", "PHASEGATE_LEASE_SECONDS": "5"}
    # One worker resumes one run at a time, the other two at once (threads):
    # both ways a drop can reach a worker.
    workers = [
        support.start(
            ["worker", "--db", f"{pg_url}&application_name={app}-{n}", "--poll", "0.2", "--jobs", str(n + 1)],
            env=env,
            mode="exec",
        )
        for n in range(2)
    ]
    stop = threading.Event()
    dropped: list[int] = []
    failed: list[Exception] = []

    def kill() -> None:
        try:
            dropped.extend(_terminate_loop(pg_url, app, stop))
        except Exception as exc:  # noqa: BLE001 - surfaced below: a dead killer would pass the test unseen
            failed.append(exc)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    try:
        wait_for(
            lambda: sum(r["status"] == "completed" for r in _statuses(pg_url).values()) >= N_RUNS // 2,
            timeout=240,
            what="half the runs completed under dropped connections",
        )
        time.sleep(1.0)  # sleep: a few more drops, with the workers idle or busy, that they must survive
        assert all(w.alive() for w in workers), "\n".join(w.result.stderr for w in workers if w.result)[-6000:]
    finally:
        stop.set()
        killer.join(10)
        for w in workers:
            if w.poll() is None:
                os.kill(w.pid, signal.SIGTERM)
        results = [w.wait(60) for w in workers]
    assert not failed, failed
    assert sum(dropped) >= 3, dropped  # the loop really dropped connections
    for res in results:
        out = res.stdout + res.stderr
        assert res.returncode == 0, res
        assert "Traceback" not in out, out[-4000:]
        # One event, one line: every line the worker wrote is a log event.
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert all(ln[:2] == "20" and " phasegate." in ln for ln in lines), [
            ln for ln in lines if not (ln[:2] == "20" and " phasegate." in ln)
        ][:5]
    # What was left is resumed; every run completes and no charge went twice.
    for rid, r in _statuses(pg_url).items():
        if r["status"] != "completed":
            _finish(pg_url, rid, ledger)
    assert Counter(r["status"] for r in _statuses(pg_url).values()) == {"completed": N_RUNS}
    keys = [json.loads(x)["key"] for x in ledger.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == N_RUNS * 3, Counter(keys).most_common(3)
