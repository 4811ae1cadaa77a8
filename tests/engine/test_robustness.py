"""#16 findings 5, 7 and 8, through the command line on both backends:
durable steps carry the code that wrote them; whatever a phase raises is
recorded; the worker's pick-up query is not starved by runs held elsewhere."""

from __future__ import annotations

import json
import socket
import time

import pytest
from engine_harness import HERE_WORKFLOWS

HOST = socket.gethostname()


def test_finding_5_a_durable_step_of_old_code_is_not_handed_to_the_fix_when_the_run_blocks_first(h):
    wf_file = h.copy_workflow("priced.py", HERE_WORKFLOWS / "priced.py")
    ledger = h.tmp / "priced.jsonl"
    inputs = json.dumps({"ledger": str(ledger)})
    p = h.cli(
        "run", f"{wf_file}:wf", "--run-id", "p1", "--input", inputs, env={"PHASEGATE_TEST_KILL_AT": "before:charge"}
    )
    assert p.killed, p
    wf_file.write_text(wf_file.read_text().replace("return 100", "return 200"))
    p = h.resume("p1")
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout, p  # blocked first: the charge is in doubt
    assert h.decide("p1", "retry_effect", "--effect", "charge").returncode == 0
    p = h.resume("p1")
    # Issue 41: the price step's function changed since its result was saved,
    # so the replay stops before handing the old price to the fixed code.
    assert p.returncode == 3 and "replay_diverged" in json.dumps(h.status("p1")["blocked"]), p
    assert h.decide("p1", "approve").returncode == 0  # go on under the fix: the price is computed again
    p = h.resume("p1")
    assert p.returncode == 0, p
    charged = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert [c["amount"] for c in charged] == [200], charged  # the fixed code's price, not the saved 100


@pytest.mark.parametrize("what,kind", [("exit", "SystemExit"), ("cancel", "CancelledError")])
def test_finding_7_a_phase_raising_systemexit_or_cancellederror_is_recorded_as_failed(h, what: str, kind: str):
    target = f"{HERE_WORKFLOWS / 'exits.py'}:wf"
    p = h.cli("run", target, "--run-id", "x1", "--input", json.dumps({"raise": what}))
    assert p.returncode == 1, p
    assert f"failed in phase only: {kind}" in p.stdout and "Traceback" not in p.stderr, p
    st = h.status("x1")
    assert st["status"] == "failed" and st["error"]["type"] == kind and st["lease"] is None


def test_finding_7_the_worker_records_it_and_goes_on(h):
    target = f"{HERE_WORKFLOWS / 'exits.py'}:wf"
    kill = {"PHASEGATE_TEST_KILL_AT": "start"}
    assert h.cli("run", target, "--run-id", "a-exits", "--input", json.dumps({"raise": "exit"}), env=kill).killed
    assert h.cli("run", target, "--run-id", "b-fine", "--input", "{}", env=kill).killed
    p = h.cli("worker", "--once", "--poll", "0.1")
    assert p.returncode == 0, p
    assert h.status("a-exits")["status"] == "failed"
    assert h.status("b-fine")["status"] == "completed"  # the worker was not ended by the first run's SystemExit


def test_finding_8_a_reset_run_is_picked_up_past_a_hundred_runs_held_elsewhere(h):
    # One real run to copy rows from, then 100 copies held live on another host.
    assert h.run("base").returncode == 0
    future = time.time() + 600
    cols = (
        [
            r[0]
            for r in h.sql(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'phasegate_runs'"
                " AND table_schema = current_schema() ORDER BY ordinal_position"
            )
        ]
        if h.backend == "postgres"
        else [r[1] for r in h.sql("PRAGMA table_info(phasegate_runs)")]
    )
    for i in range(100):
        held = {
            "run_id": f"'held-{i:03d}'",
            "status": "'running'",
            "updated_at": str(1.0 + i),
            "lease_owner": f"'elsewhere:4242:{i}'",
            "lease_host": "'elsewhere'",
            "lease_pid": "4242",
            "lease_expires_at": repr(future),
            "heartbeat_at": repr(future - 10),
        }
        h.sql(
            f"INSERT INTO phasegate_runs ({', '.join(cols)})"
            f" SELECT {', '.join(held.get(c, c) for c in cols)} FROM phasegate_runs WHERE run_id = 'base'"
        )
    assert h.run("r1", kill="start:report").killed
    assert h.decide("r1", "reset").returncode == 0
    p = h.cli("worker", "--once", "--poll", "0.1")
    assert p.returncode == 0, p
    assert h.status("r1")["status"] == "completed"
    held = h.sql("SELECT count(*) FROM phasegate_runs WHERE lease_host = 'elsewhere'")
    assert held == [(100,)]  # and none of the runs held elsewhere was touched
