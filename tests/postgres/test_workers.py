"""Several workers share one PostgreSQL store: forty runs, four worker
processes (some SIGKILLed midway), every run completed, no effect twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from phasegate import Engine
from phasegate.authoring.loader import load
from phasegate.errors import LeaseLost
from tests.conftest import BILLING, WORKFLOWS, cli
from tests.support import cli as support
from tests.support.waiting import until

N_RUNS = 40
N_WORKERS = 4


def _start_worker(url: str, trace: Path, slow: str) -> subprocess.Popen[str]:
    env = {"PHASEGATE_TEST_TRACE": str(trace), "PHASEGATE_TEST_SLOW": slow, "PHASEGATE_LEASE_SECONDS": "3"}
    return support.popen(["worker", "--db", url, "--poll", "0.2"], env=env, merge_stderr=True)


def _interrupted_runs(url: str, ledger: Path) -> None:
    """Forty runs that started and were interrupted (as a deploy would): the
    first phase is cut by KeyboardInterrupt, leaving each run's lease to lapse.

    The lease is half a second so that it lapses soon; on a starved machine a
    pause of a third of that between two heartbeats loses it before the first
    phase is called (`LeaseLost`, nothing recorded). That run is left just as
    interrupted, its row written and its lease gone, so either way will do."""
    wf = load(BILLING)
    eng = Engine(url, lease_seconds=0.5)
    os.environ["PHASEGATE_TEST_KILL_AT"] = ""

    def boom(*_a: object) -> None:
        raise KeyboardInterrupt

    original = wf.phases[0].fn
    try:
        object.__setattr__(wf.phases[0], "fn", lambda ctx: boom())
        for i in range(N_RUNS):
            try:
                eng.run(wf, f"run-{i:02d}", {"ledger": str(ledger), "idempotent": True, "invoices": 3}, target=BILLING)
            except (KeyboardInterrupt, LeaseLost):
                pass
    finally:
        object.__setattr__(wf.phases[0], "fn", original)
        eng.close()


def test_four_workers_drain_forty_runs_with_kills(pg_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    trace = tmp_path / "trace.txt"
    _interrupted_runs(pg_url, ledger)
    assert len(json.loads(cli("status", "--json", "--db", pg_url).stdout)) == N_RUNS
    time.sleep(0.6)  # sleep: let the creators' leases lapse (the creator is still alive on this host)

    workers = [_start_worker(pg_url, trace, "0.25") for _ in range(N_WORKERS)]
    killed = 0

    def drained() -> bool:
        nonlocal killed
        proc = cli("status", "--json", "--db", pg_url)
        assert proc.returncode == 0, proc.stderr
        runs = json.loads(proc.stdout)
        done = sum(1 for r in runs if r["status"] == "completed")
        # Kill two workers mid-flight, once some work has happened.
        if killed < 2 and done >= 3 + 5 * killed:
            workers[killed].send_signal(signal.SIGKILL)
            workers[killed].wait()
            killed += 1
        return done == N_RUNS

    try:
        until(drained, f"the workers to complete all {N_RUNS} runs", timeout=240, every=0.5)
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
    runs = json.loads(cli("status", "--json", "--db", pg_url).stdout)
    statuses = Counter(r["status"] for r in runs)
    assert statuses == {"completed": N_RUNS}, statuses
    assert killed == 2
    # The gateway saw every charge exactly once.
    keys = [json.loads(line)["key"] for line in ledger.read_text().splitlines()]
    dup = [k for k, n in Counter(keys).items() if n > 1]
    assert not dup, dup
    assert len(set(keys)) == N_RUNS * 3
    for r in runs:
        assert [p["state"] for p in r["phases"]] == ["done"] * 4
        assert all(e["state"] == "done" for e in r["effects"])


def test_same_store_same_guarantees(pg_url: str, tmp_path: Path) -> None:
    """Kill between intent and completion on PostgreSQL: in doubt, then confirmed once."""
    ledger = tmp_path / "ledger.jsonl"
    env = {"PHASEGATE_TEST_KILL_AT": "after:charge:inv-1"}
    p = cli("run", BILLING, "--run-id", "pg-1", "--input", json.dumps({"ledger": str(ledger)}), "--db", pg_url, env=env)
    assert p.returncode == -signal.SIGKILL
    p = cli("resume", "pg-1", "--db", pg_url)
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout
    assert (
        cli(
            "decide",
            "pg-1",
            "confirm_effect",
            "--result",
            '{"charge_id": "ch-seen"}',
            "--reason",
            "ledger",
            "--db",
            pg_url,
        ).returncode
        == 0
    )
    p = cli("resume", "pg-1", "--db", pg_url)
    assert p.returncode == 0, p.stdout + p.stderr
    keys = [json.loads(line)["key"] for line in ledger.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 3


def test_console_change_feed_sees_commits(pg_url: str, tmp_path: Path) -> None:
    eng = Engine(pg_url)
    feed = eng.data_version()
    try:
        assert feed.changed() is False
        p = cli(
            "run", BILLING, "--run-id", "feed-1", "--input", json.dumps({"ledger": str(tmp_path / "l")}), "--db", pg_url
        )
        assert p.returncode == 0, p.stderr
        until(feed.changed, "the change feed to see the run", timeout=10)
    finally:
        feed.close()
        eng.close()


def test_second_open_migrates_nothing_and_reads_schema(pg_url: str) -> None:
    Engine(pg_url).close()
    eng = Engine(pg_url, create=False)
    assert eng.store.schema_problem is None
    assert eng.counts() == {}
    eng.close()


_ = WORKFLOWS
