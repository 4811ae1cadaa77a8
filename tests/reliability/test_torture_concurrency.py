"""Concurrency: one holder per run, no `database is locked` reaching a user,
no write lost, and one decision per question."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.support.waiting import until
from tests.torture import proc
from tests.torture.crash import TARGET as TORTURE

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")

WORKFLOWS = proc.ROOT / "tests" / "workflows"
GATE = f"{WORKFLOWS / 'concurrency.py'}:gate"
MANY = f"{WORKFLOWS / 'concurrency.py'}:many"


def _barrier_start(args: list[str], go: Path, **kw: object) -> proc.Child:
    return proc.start(args, before=lambda: proc.wait_for(go), **kw)  # type: ignore[arg-type]


def test_eight_processes_one_run_id_exactly_one_runs(tmp_path: Path) -> None:
    db, go, release = tmp_path / "s.db", tmp_path / "go", tmp_path / "release"
    args = ["run", GATE, "--run-id", "contended", "--input", json.dumps({"release": str(release)}), "--db", str(db)]
    children = [_barrier_start(args, go) for _ in range(8)]
    go.touch()  # all eight go at once
    done: dict[int, proc.Result] = {}

    def seven_back() -> bool:
        for c in children:
            if c.pid not in done and c.poll() is not None:
                done[c.pid] = c.wait()
        return len(done) >= 7

    until(seven_back, "seven of the eight to come back while the holder holds", every=0.01)
    assert len(done) == 7, f"only {len(done)} of 8 came back while the holder held: {list(done.values())}"
    release.touch()
    for c in children:
        if c.pid not in done:
            done[c.pid] = c.wait(60)
    winners = [r for r in done.values() if r.rc == 0]
    losers = [r for r in done.values() if r.rc != 0]
    assert len(winners) == 1, [(r.rc, r.stderr) for r in done.values()]
    holder = winners[0].pid
    for r in losers:
        assert r.rc == 4, (r.rc, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and f":{holder} " in lines[0] and "held" in lines[0], r.stderr
        assert not r.traceback
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert conn.execute("SELECT count(*) FROM phasegate_checkpoints").fetchone()[0] == 1


def _blocked_runs(db: Path, tmp_path: Path, n: int) -> list[str]:
    """Runs stopped with one in-doubt charge each (killed after the intent)."""
    ids = []
    for i in range(n):
        rid = f"doubt-{i}"
        ins = {"items": 1, "ledger": str(tmp_path / f"{rid}.ledger"), "mailbox": str(tmp_path / f"{rid}.mail")}
        r = proc.run(
            ["run", TORTURE, "--run-id", rid, "--input", json.dumps(ins), "--db", str(db)],
            env={"PHASEGATE_TEST_KILL_AT": "before:charge:0"},
        )
        assert r.killed, r
        r = proc.run(["resume", rid, "--db", str(db)])
        assert r.rc == 3 and "in_doubt_effect" in r.stdout, r
        ids.append(rid)
    return ids


def _hammer_status(db: Path, stop: Path, run_id: str) -> int:
    from phasegate.cli.main import main

    n = 0
    while not stop.exists() or n < 3:
        for args in (["status", "--json"], ["status", run_id, "--json"], ["status"]):
            rc = main([*args, "--db", str(db)])
            if rc != 0:
                print(f"status {args} exited {rc}", file=sys.stderr)
                return 1
        n += 1
    print(f"{n} rounds")
    return 0


import sys  # noqa: E402 - used by the hammer children


def test_decisions_and_readers_hammer_a_checkpointing_run(tmp_path: Path) -> None:
    db, stop = tmp_path / "s.db", tmp_path / "stop"
    blocked = _blocked_runs(db, tmp_path, 6)
    runner = proc.start(["run", MANY, "--run-id", "busy", "--input", json.dumps({"pace": 0.01}), "--db", str(db)])
    time.sleep(0.2)  # sleep: a head start for the runner; readers and deciders meet it wherever it has got to
    readers = [proc.start_fn(lambda: _hammer_status(db, stop, "busy"), db=db) for _ in range(2)]
    deciders = []
    for i, rid in enumerate(blocked):
        answer = ["retry_effect"] if i % 2 else ["confirm_effect", "--result", '{"charge_id": "ch-0", "amount": 1}']
        deciders.append(
            proc.start(["decide", rid, *answer, "--reason", f"hammer {i}", "--operator", f"op{i}", "--db", str(db)])
        )
    results = [d.wait(60) for d in deciders]
    run = runner.wait(120)
    stop.touch()
    reads = [r.wait(60) for r in readers]
    everything = results + [run] + reads
    for r in everything:
        assert "database is locked" not in (r.stderr + r.stdout).lower() and "stayed locked" not in r.stderr, r
        assert not r.traceback, r
    assert [r.rc for r in results] == [0] * len(blocked), [(r.rc, r.stderr) for r in results]
    assert run.rc == 0, run
    assert all(r.rc == 0 for r in reads), reads
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        ckpts = conn.execute("SELECT count(*) FROM phasegate_checkpoints WHERE run_id='busy'").fetchone()[0]
        decs = conn.execute(
            "SELECT run_id, action, operator, state FROM phasegate_decisions ORDER BY run_id"
        ).fetchall()
    assert ckpts == 40
    assert sorted(d[0] for d in decs) == sorted(blocked)  # every decision landed, none twice
    assert all(d[3] == "pending" for d in decs)
    # and each applies at the next run: every blocked run completes
    for rid in blocked:
        r = proc.run(["resume", rid, "--db", str(db)])
        assert r.rc == 0, r


def test_two_operators_deciding_at_once_one_applies(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    pairs = [("retry_effect", "retry_effect"), ("confirm_effect", "retry_effect"), ("confirm_effect", "confirm_effect")]
    runs = _blocked_runs(db, tmp_path, len(pairs))
    for rid, (a, b) in zip(runs, pairs, strict=True):
        go = tmp_path / f"go-{rid}"
        kids = [
            _barrier_start(
                ["decide", rid, act, *(["--result", "{}"] if act == "confirm_effect" else [])]
                + ["--reason", f"operator {n}", "--operator", f"op{n}", "--db", str(db)],
                go,
            )
            for n, act in enumerate((a, b))
        ]
        go.touch()
        res = [k.wait(60) for k in kids]
        assert sorted(r.rc for r in res) == [0, 2], [(r.rc, r.stderr) for r in res]
        loser = next(r for r in res if r.rc == 2)
        assert "already been decided" in loser.stderr and len(loser.stderr.strip().splitlines()) == 1, loser.stderr
        assert not any(r.traceback for r in res)
        with closing(sqlite3.connect(db, isolation_level=None)) as conn:
            n = conn.execute("SELECT count(*) FROM phasegate_decisions WHERE run_id=?", (rid,)).fetchone()[0]
        assert n == 1
