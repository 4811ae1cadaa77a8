"""`phasegate worker`: carries out an operator's decision with no further
command, resumes dead runs, handles one pass with --once, and stops cleanly
on SIGTERM and SIGINT."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from demo_support import (
    cli,
    kill_at,
    ledger_keys,
    read_until,
    start,
    status,
    stop,
    stop_between_phases,
    view,
    wait_for,
)

from phasegate import Engine
from phasegate.sample_runs import billing, pipeline
from phasegate.sample_runs.gateway import Gateway


def _env_mismatch_run(tmp_path: Path, db: Path) -> tuple[str, dict[str, Any]]:
    """A billing run priced, stopped before charging, then blocked because the
    tax-rate file it was priced with changed."""
    rid = "bill-hooli"
    inputs = billing.prepare(tmp_path / rid, customer="hooli", idempotent=True)
    stop_between_phases(db, billing.wf, rid, inputs, phases=2)
    rates = tmp_path / rid / "config" / "tax_rates.json"
    rates.write_text(rates.read_text().replace("0.2,", "0.21,"))
    with Engine(db) as eng:
        outcome = eng.run(billing.wf, rid)
    assert [str(b.kind) for b in outcome.blocked] == ["env_mismatch"], outcome
    return rid, inputs


def test_worker_carries_out_an_approval(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    rid, inputs = _env_mismatch_run(tmp_path, db)
    worker = start("worker", "--db", str(db), "--poll", "0.2")
    try:
        # The worker leaves a blocked run alone until someone decides.
        assert view(db, rid)["status"] == "blocked"
        proc = cli("decide", rid, "approve", "--reason", "Q1 rates; these invoices keep their prices", "--db", str(db))
        assert proc.returncode == 0, proc.stderr
        wait_for(lambda: status(db, rid)["status"] == "completed", every=1.0, what=f"{rid} to complete")
    finally:
        log = stop(worker)
    assert worker.returncode == 0, log
    final = status(db, rid)
    assert [d["state"] for d in final["decisions"]] == ["applied"]
    assert [p["state"] for p in final["phases"]] == ["done"] * 5
    # Each invoice was charged exactly once.
    keys = ledger_keys(Path(inputs["workdir"]) / "gateway")
    assert len(keys) == len(set(keys)) == 4
    assert f"run {rid}: resuming (decision waiting: approve" in log
    assert f"run {rid}: completed" in log


def test_worker_once_resumes_what_is_waiting_then_exits(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    # An interrupted run (killed mid-transform)...
    p_inputs = pipeline.prepare(tmp_path / "pipe", files=4)
    kill_at(db, "pipeline", "pipe-1", p_inputs, "transformed:orders-2026-11-29-01.csv", tmp_path)
    # ...and an in-doubt charge an operator has settled by reading the gateway's ledger.
    b_inputs = billing.prepare(tmp_path / "bill", customer="globex", idempotent=False)
    kill_at(db, "billing", "bill-1", b_inputs, "charged:INV-1002", tmp_path)
    # The sample's reconcile hook would settle it from the ledger; its lookup is down.
    Gateway(Path(b_inputs["workdir"]) / "gateway", idempotent=False).set_lookup_down(True)
    with Engine(db) as eng:
        assert eng.run(billing.wf, "bill-1").status == "blocked"
    key = "bill-1/charge/charge:INV-1002"
    assert ledger_keys(Path(b_inputs["workdir"]) / "gateway").count(key) == 1
    result = json.dumps({"charge_id": "ch_seen_in_ledger", "status": "succeeded"})
    proc = cli(
        "decide",
        "bill-1",
        "confirm_effect",
        "--effect",
        key,
        "--result",
        result,
        "--reason",
        "the gateway ledger has it",
        "--db",
        str(db),
    )
    assert proc.returncode == 0, proc.stderr

    proc = cli("worker", "--once", "--db", str(db), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert view(db, "pipe-1")["status"] == "completed"
    assert view(db, "bill-1")["status"] == "completed"
    assert "run pipe-1: resuming (interrupted" in proc.stderr
    assert "run bill-1: resuming (decision waiting: confirm_effect" in proc.stderr
    # The confirmed charge was not made again.
    keys = ledger_keys(Path(b_inputs["workdir"]) / "gateway")
    assert keys.count(key) == 1 and len(keys) == 4

    # One pass: each waiting run handled once, then the worker exits.
    assert proc.stderr.count(": resuming (") == 2, proc.stderr


def _slow_interrupted_run(tmp_path: Path, db: Path, rid: str) -> None:
    """An interrupted pipeline run, slow enough that a worker is still inside
    a phase when it is told to stop."""
    inputs = pipeline.prepare(tmp_path / rid, files=5, pace=0.8)
    stop_between_phases(db, pipeline.wf, rid, inputs, phases=1)


def _taken_by(db: Path, rid: str, pid: int) -> bool:
    """The worker holds the run (or, on a very fast machine, already finished it)."""
    v = view(db, rid)
    lease = v["lease"]
    return v["status"] == "completed" or bool(lease and lease["alive"] and lease["holder"].endswith(f":{pid}"))


def test_worker_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    rid = "slow-1"
    _slow_interrupted_run(tmp_path, db, rid)
    worker = start("worker", "--db", str(db), "--poll", "0.1")
    try:
        wait_for(lambda: _taken_by(db, rid, worker.pid), what="the worker to take the run")
    finally:
        log = stop(worker, signal.SIGTERM)
    assert worker.returncode == 0, log
    assert "SIGTERM: stopping each run at its next step" in log
    after = view(db, rid)
    # Stopped at its next step (#26), lease released, resumable as is.
    assert after["status"] in ("interrupted", "completed"), after["status"]
    assert after["lease"] is None
    if after["status"] == "interrupted":
        assert "stopped by SIGTERM" in after["attention"], after["attention"]  # in a phase, or before one
        assert f"run {rid}: interrupted: stopped by SIGTERM" in log, log
    with Engine(db) as eng:
        assert eng.run(pipeline.wf, rid).status == "completed"


def test_worker_second_sigint_stops_at_once(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    rid = "slow-2"
    _slow_interrupted_run(tmp_path, db, rid)
    worker = start("worker", "--db", str(db), "--poll", "0.1")
    log = ""
    try:
        wait_for(lambda: _taken_by(db, rid, worker.pid), what="the worker to take the run")
        worker.send_signal(signal.SIGINT)
        log = read_until(worker, "SIGINT: stopping each run at its next step")
    finally:
        log += stop(worker, signal.SIGINT)
    # Usually the second signal lands mid-phase ("stopped at once"); if the
    # phase had already ended, the worker was on its way out anyway.
    assert worker.returncode in (0, 130), log
    if worker.returncode == 130:
        assert "stopped at once" in log or "interrupted" in log, log
    # Either way the run can be resumed to completion.
    assert view(db, rid)["status"] in ("interrupted", "completed")
    with Engine(db) as eng:
        assert eng.run(pipeline.wf, rid).status == "completed"


def test_worker_with_jobs_carries_out_a_decision_while_a_long_run_resumes(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    slow = "slow-3"
    inputs = pipeline.prepare(tmp_path / slow, files=4, pace=10.0)
    stop_between_phases(db, pipeline.wf, slow, inputs, phases=2)  # transform (the slow phase) is next
    rid, _inputs = _env_mismatch_run(tmp_path, db)
    worker = start("worker", "--db", str(db), "--poll", "0.1", "--jobs", "2")
    log = ""
    try:
        wait_for(lambda: _taken_by(db, slow, worker.pid), what="the worker to take the slow run")
        proc = cli("decide", rid, "approve", "--reason", "Q1 rates; these invoices keep their prices", "--db", str(db))
        assert proc.returncode == 0, proc.stderr
        wait_for(lambda: view(db, rid)["status"] == "completed", what=f"{rid} to complete")
        # The approval did not wait for the slow run, which is still being resumed.
        assert _taken_by(db, slow, worker.pid) and view(db, slow)["status"] == "running"
        # Two signals sent back to back can arrive as one: send the second once
        # the worker has said it got the first.
        worker.send_signal(signal.SIGINT)
        log = read_until(worker, "SIGINT: stopping each run at its next step")
    finally:
        log += stop(worker, signal.SIGINT)
    assert worker.returncode == 130, log
    assert "stopped at once" in log
    assert view(db, slow)["status"] == "interrupted"
