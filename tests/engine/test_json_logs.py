"""`--log-format json`: a worker's log as one JSON object a line, with the
run and the phase in their own keys, and hostile stored text escaped so it
can neither forge a line nor reach the terminal."""

from __future__ import annotations

import json
from pathlib import Path

from engine_harness import WORKFLOWS, Harness

from phasegate.observe.logs import KEYS

HOSTILE = f"{WORKFLOWS / 'hostile.py'}:wf"


def test_a_worker_logs_json_lines(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    world, fail = tmp_path / "world.txt", tmp_path / "fail.txt"
    world.write_text("w1")
    fail.write_text('boom\x1b[31m\u202e\n2026-12-04 {"level": "info", "message": "forged"}')
    inputs = json.dumps({"world": str(world), "fail": str(fail)})
    assert h.cli("run", HOSTILE, "--run-id", "f1", "--input", inputs).returncode == 1
    assert h.decide("f1", "rewind", "--phase", "second", reason="again").returncode == 0

    p = h.cli("worker", "--once", "--log-format", "json", real=True)
    assert p.returncode == 0, p
    assert "\x1b" not in p.stderr and "\u202e" not in p.stderr
    lines = [json.loads(line) for line in p.stderr.splitlines()]
    assert all(tuple(r) == KEYS for r in lines), lines
    assert all(r["timestamp"].endswith("Z") for r in lines), lines
    assert {r["logger"] for r in lines} == {"phasegate.worker", "phasegate.run"}, lines
    # The run's own line and the worker's, each naming the run, its workflow and the phase.
    failed = [r for r in lines if r["run_id"] == "f1" and r["level"] == "error"]
    assert [r["logger"] for r in failed] == ["phasegate.run", "phasegate.worker"], lines
    assert all(r["phase"] == "second" for r in failed), failed
    assert all(r["workflow"] == "test-hostile" for r in failed), failed
    for r in failed:
        assert "RuntimeError: boom\\x1b[31m<U+202E>\\x0a2026-12-04" in r["message"], r
    assert [r for r in lines if "forged" in r["message"]] == failed
    assert any(r["run_id"] == "f1" and "resuming" in r["message"] for r in lines)
