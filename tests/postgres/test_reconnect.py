"""A store that survives its server (#16, finding 4): the server drops every
connection of a worker in the middle of its runs (`pg_terminate_backend`, as
a restart or a failover does). The worker keeps running and serving; each
run it had in hand carries on or stops interrupted (never a traceback, never
"running" with a live-looking lease); after a resume every run is complete
and no charge reached the gateway twice."""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import psycopg

from tests.conftest import BILLING, cli
from tests.engine.pg_schema import PG
from tests.support import cli as support
from tests.support.pause import wait_for

N_RUNS = 8


def _terminate(app: str) -> int:
    """Drop every server connection whose application_name is `app`."""
    with psycopg.connect(PG, autocommit=True) as con:
        rows = con.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (app,)
        ).fetchall()
    return len(rows)


# The runs made to be resumed, the reads and the resumes and decisions that
# finish the runs off are forked warm children (tests/support/cli.py): the
# same command line, without half a second of imports each.
def _statuses(url: str) -> dict[str, dict]:
    p = cli("status", "--json", "--db", url, mode="fork")
    assert p.returncode == 0, p.stderr
    return {r["run_id"]: r for r in json.loads(p.stdout)}


def _finish(url: str, run_id: str, ledger: Path) -> None:
    """Resume; answer an in-doubt charge from the gateway's own ledger."""
    for _ in range(6):
        p = cli("resume", run_id, "--db", url, mode="fork")
        if p.returncode == 0:
            return
        assert p.returncode == 3 and "Traceback" not in p.stderr, p
        charged = {}
        if ledger.exists():
            charged = {json.loads(x)["key"]: json.loads(x) for x in ledger.read_text().splitlines()}
        for b in _statuses(url)[run_id]["blocked"]:
            assert b["kind"] == "in_doubt_effect", b
            key = b["effect"]
            if key in charged:
                res = json.dumps({"charge_id": charged[key]["charge_id"], "amount": charged[key]["amount"]})
                d = cli(
                    "decide",
                    run_id,
                    "confirm_effect",
                    "--effect",
                    key,
                    "--result",
                    res,
                    "--reason",
                    "ledger",
                    "--db",
                    url,
                    mode="fork",
                )
            else:
                d = cli(
                    "decide",
                    run_id,
                    "retry_effect",
                    "--effect",
                    key,
                    "--reason",
                    "not in ledger",
                    "--db",
                    url,
                    mode="fork",
                )
            assert d.returncode == 0, d
    raise AssertionError(f"{run_id} did not complete")


def test_terminated_connections_mid_worker(pg_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    inputs = json.dumps({"ledger": str(ledger)})
    for i in range(N_RUNS):
        # Each run dies at its first phase: the worker's to pick up.
        p = cli(
            "run",
            BILLING,
            "--run-id",
            f"r{i}",
            "--input",
            inputs,
            "--db",
            pg_url,
            env={"PHASEGATE_TEST_KILL_AT": "start:load"},
            mode="fork",
        )
        assert p.killed, p
    app = "pgt-" + pg_url.rsplit("%3D", 1)[-1]
    worker = support.start(
        ["worker", "--db", f"{pg_url}&application_name={app}", "--poll", "0.2"],
        env={"PHASEGATE_TEST_SLOW": "0.2", "PHASEGATE_LEASE_SECONDS": "5"},
        mode="exec",  # the worker is the subject: started as an operator starts it
    )
    try:
        terminated = 0
        for wave in (2, 5):
            wait_for(
                lambda wave=wave: sum(r["status"] == "completed" for r in _statuses(pg_url).values()) >= wave,
                timeout=120,
                what=f"{wave} runs completed",
            )
            terminated += _terminate(app)
            assert worker.alive(), worker.result
        assert terminated >= 2
        # The worker goes on serving: every run ends completed, or stopped
        # (blocked on a charge in doubt, or interrupted) for a resume.
        wait_for(
            lambda: (
                all(r["status"] in ("completed", "blocked", "interrupted") for r in _statuses(pg_url).values())
                and sum(r["status"] == "completed" for r in _statuses(pg_url).values()) > 5
            ),
            timeout=180,
            what="the worker to finish what it can",
        )
        assert worker.alive(), worker.result
    finally:
        worker.kill() if worker.poll() is not None else None
        if worker.poll() is None:
            import os

            os.kill(worker.pid, signal.SIGTERM)
        res = worker.wait(60)
    assert res.returncode == 0, res
    assert "Traceback" not in res.stdout + res.stderr, (res.stdout + res.stderr)[-3000:]
    for rid, r in _statuses(pg_url).items():
        assert r["lease"] is None or r["status"] != "running", r
        if r["status"] != "completed":
            _finish(pg_url, rid, ledger)
    final = _statuses(pg_url)
    assert Counter(r["status"] for r in final.values()) == {"completed": N_RUNS}
    keys = [json.loads(x)["key"] for x in ledger.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == N_RUNS * 3, Counter(keys).most_common(3)
