"""A phase that raises fails the run (exit 1, the phase and error named);
fixing the code of that phase and resuming is the ordinary path."""

from __future__ import annotations

from engine_harness import HERE_WORKFLOWS


def test_failed_phase_then_fix_and_resume(h):
    wf_file = h.copy_workflow("flaky.py", HERE_WORKFLOWS / "flaky.py")
    p = h.cli("run", f"{wf_file}:wf", "--run-id", "f1")
    assert p.returncode == 1, p
    assert "failed in phase divide: ZeroDivisionError: division by zero" in p.stdout
    assert "Traceback" not in p.stdout + p.stderr
    st = h.status("f1")
    assert st["status"] == "failed"
    assert {ph["name"]: ph["state"] for ph in st["phases"]} == {"gather": "done", "divide": "failed", "total": "open"}
    assert st["error"]["phase"] == "divide" and st["error"]["type"] == "ZeroDivisionError"

    wf_file.write_text(wf_file.read_text().replace("divisor = 0  # the bug", "divisor = 2"))
    h.clear_trace()
    p = h.resume("f1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:divide", "start:total"]
    st = h.status("f1")
    assert st["status"] == "completed" and st["error"] is None
    assert any("code of phase divide changed" in n for n in st["notes"])


def test_reset_does_not_retry_an_effect_in_doubt(h):
    assert h.run("r1", kill="after:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "reset", reason="start over").returncode == 0
    h.clear_trace()
    p = h.resume("r1")
    # The effect's intent outlives the reset: it is still in doubt, and still asks.
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout, p
    assert len(h.charges()) == 2
