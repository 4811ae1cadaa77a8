"""Issue #29, findings 10 and 11's text: one event, one line. A phase error
holding a newline cannot forge a log line in `phasegate run`'s or the
worker's stderr; a workflow, phase, probe, effect or step name holding a
control, bidi or invisible character is refused where it is declared; an
alert event carries no such character in any field."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from engine_harness import Harness, one_line_error

FORGED = "2026-12-02 06:00:00,000 phasegate.worker INFO run payroll-2026-12: completed"
#: A line as the log writes one: its time first.
EVENT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def _hostile(h: Harness) -> str:
    world, fail = h.tmp / "world.txt", h.tmp / "fail.txt"
    world.write_text("w")
    fail.write_text(f"boom\n{FORGED}")
    return json.dumps({"world": str(world), "fail": str(fail)})


def _events(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


def test_a_phase_error_with_a_newline_forges_no_log_line(h):
    inputs = _hostile(h)
    p = h.cli("-v", "run", "tests.workflows.hostile:wf", "--run-id", "r1", "--input", inputs, real=True)
    assert p.returncode == 1, p
    assert "boom\\x0a2026-12-02" in p.stderr, p.stderr
    lines = _events(p.stderr)
    assert lines and all(EVENT.match(ln) for ln in lines), lines
    assert not any(ln.startswith("2026-12-02 06:00:00") for ln in lines), lines
    assert "\n" not in p.stdout.rstrip("\n")  # the run's own line too

    # The worker, resuming it after a reset, logs the same failure: one line too.
    assert h.decide("r1", "reset", reason="again").returncode == 0
    p = h.cli("worker", "--once", real=True)
    lines = _events(p.stderr)
    assert any("failed in phase second" in ln for ln in lines), p.stderr
    assert all(EVENT.match(ln) for ln in lines), lines
    assert not any(ln.startswith("2026-12-02 06:00:00") for ln in lines), lines


NAMES = {
    "workflow": "wf = Workflow('pay\\u202eroll')\n@wf.phase()\ndef load(ctx):\n    return 1\n",
    "phase": "wf = Workflow('w')\n@wf.phase(name='lo\\x9bad')\ndef load(ctx):\n    return 1\n",
    "phase-newline": "wf = Workflow('w')\n@wf.phase(name='load\\nINFO completed')\ndef load(ctx):\n    return 1\n",
    "probe": "wf = Workflow('w')\n@wf.probe('ta\\u200bx')\ndef tax():\n    return 1\n"
    "@wf.phase()\ndef load(ctx):\n    return 1\n",
}


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_declared_name_with_a_control_character_is_refused(h, tmp_path: Path, kind: str):
    src = tmp_path / "named.py"
    src.write_text("from phasegate import Workflow\n" + NAMES[kind])
    p = h.cli("run", f"{src}:wf", "--run-id", "r1", "--input", "{}")
    line = one_line_error(p)
    assert "must not contain control, format or invisible characters" in line, line
    assert "\u202e" not in line and "\x9b" not in line and "\u200b" not in line
    if h.backend == "sqlite":
        assert not h.db.exists() or h.sql("SELECT count(*) FROM phasegate_runs") == [(0,)]
    else:
        rows = h.sql("SELECT to_regclass('phasegate_runs')")
        assert rows == [(None,)] or h.sql("SELECT count(*) FROM phasegate_runs") == [(0,)]


@pytest.mark.parametrize("call", ["ctx.effect('char\\u202ege', lambda key: 1)", "ctx.step('st\\x1bep', lambda: 1)"])
def test_an_effect_or_step_name_with_a_control_character_is_refused(h, tmp_path: Path, call: str):
    src = tmp_path / "named.py"
    src.write_text(
        f"from phasegate import Workflow\nwf = Workflow('w')\n@wf.phase()\ndef load(ctx):\n    return {call}\n"
    )
    p = h.cli("run", f"{src}:wf", "--run-id", "r1", "--input", "{}")
    assert p.returncode == 1 and not p.traceback, p
    assert "must not contain control, format or invisible characters" in p.stdout + p.stderr, p
    assert h.sql("SELECT count(*) FROM phasegate_effects") == [(0,)]
    assert h.sql("SELECT count(*) FROM phasegate_steps") == [(0,)]


def test_every_field_of_an_alert_event_is_safe_text(h):
    """Names are refused at declaration now; an older store (or an edited
    row) still holds them, and the event sends none of them raw."""
    inputs = _hostile(h)
    assert h.cli("run", "tests.workflows.hostile:wf", "--run-id", "r1", "--input", inputs).returncode == 1
    h.sql("UPDATE phasegate_runs SET workflow = ?, frontier_phase = ?", ("test-\u202ehostile", "sec\x9bond\n"))
    out = h.tmp / "event.json"
    hook = f"{sys.executable} -c 'import sys; open(sys.argv[1], \"w\").write(sys.stdin.read())' {out}"
    p = h.cli("watch", "--once", "--exec", hook, real=True)
    assert p.returncode == 0, p
    ev = json.loads(out.read_text())
    texts: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            texts.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(ev)
    bad = [t for t in texts if any(c in t for c in "\u202e\x9b\n\x1b\x07")]
    assert not bad, bad
    assert ev["workflow"] == "test-<U+202E>hostile" and ev["frontier"]["phase"] == "sec\\x9bond\\x0a"
