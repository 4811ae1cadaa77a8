"""`prune` removes a watch's alert rows on the proof rule: an alert row goes
once it was sent and the stop it announced is over; the alert of the stop a
run is in stays, so no watch announces that stop twice."""

from __future__ import annotations

import json
from pathlib import Path

from engine_harness import HERE_WORKFLOWS, Harness

FLAKY = f"{HERE_WORKFLOWS / 'flaky.py'}:wf"


def _watch_once(h: Harness, out: Path) -> None:
    p = h.cli("watch", "--exec", f"cat >> {out}; echo >> {out}", "--once")
    assert p.returncode == 0, p


def _alert_candidates(h: Harness) -> list[dict]:
    p = h.cli("prune", "--json")
    assert p.returncode == 0, p
    return [c for c in json.loads(p.stdout) if c["kind"] == "sent_alerts"]


def test_sent_alerts_of_stops_that_are_over_are_pruned(h: Harness) -> None:
    out = h.tmp / "alerts.jsonl"
    assert h.cli("run", FLAKY, "--run-id", "f1").returncode == 1
    _watch_once(h, out)
    assert h.sql("SELECT state FROM phasegate_alerts") == [("sent",)]
    assert _alert_candidates(h) == []  # f1 is still in the stop that alert announced

    # Rewound and failed again: a new stop, announced by its own alert.
    assert h.decide("f1", "rewind", "--phase", "divide", reason="retry").returncode == 0
    assert h.resume("f1").returncode == 1
    _watch_once(h, out)
    assert out.read_text().count("\n") == 2
    (cand,) = _alert_candidates(h)
    assert cand["run_id"] == "f1" and cand["safety"] == "no_future_value" and cand["bytes"] > 0
    assert "sent" in cand["why_safe"] and "over" in cand["why_safe"]

    p = h.cli("prune", "--apply", "--json")
    assert p.returncode == 0, p
    assert h.sql("SELECT COUNT(*) FROM phasegate_alerts") == [(1,)]
    assert _alert_candidates(h) == []
    # The remaining row is the current stop's: a watch does not send it again.
    _watch_once(h, out)
    assert out.read_text().count("\n") == 2
