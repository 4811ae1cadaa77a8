"""Each sample workflow runs to completion, and a run SIGKILLed part-way
(inside a durable-step phase, and for billing inside a charge) resumes to the
same result without doing any effect twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from demo_support import TARGETS, kill_at, ledger_keys, view

from phasegate import Engine
from phasegate.sample_runs import billing, pipeline, research

CASES = {
    # workflow: (prepare, kill point, the phase that is partial when killed)
    "billing-pricing": (billing, lambda w: billing.prepare(w, customer="umbrella"), "priced:INV-1002", "price"),
    "billing-charging": (billing, lambda w: billing.prepare(w, customer="umbrella"), "charged:INV-1003", "charge"),
    "pipeline": (pipeline, lambda w: pipeline.prepare(w, files=5), "transformed:orders-2026-11-29-02.csv", "transform"),
    "research": (research, lambda w: research.prepare(w, topic="tidal power"), "gathered:1", "gather"),
}


def _result(module: Any, inputs: dict[str, Any]) -> Any:
    """What the run left in the world, minus what names the run itself."""
    work = Path(inputs["workdir"])
    if module is billing:
        return json.loads((work / "archive" / "summary.json").read_text())
    if module is pipeline:
        doc = json.loads((work / "target" / inputs["batch"] / "_MANIFEST.json").read_text())
        return {"parts": doc["parts"], "totals": doc["totals"]}
    return sorted((p.name, p.read_text()) for p in (work / "reports").iterdir())


@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_and_resumes_after_sigkill(case: str, tmp_path: Path) -> None:
    module, prepare, point, partial_phase = CASES[case]
    db = tmp_path / "runs.db"

    # Uninterrupted, for reference.
    ref_inputs = prepare(tmp_path / "ref")
    with Engine(db) as eng:
        outcome = eng.run(module.wf, "ref", ref_inputs, target=TARGETS[module.wf.name])
    assert str(outcome.status) == "completed", outcome

    # Killed part-way (a real process, SIGKILLed), then resumed.
    inputs = prepare(tmp_path / "killed")
    kill_at(db, module.wf.name, "killed", inputs, point, tmp_path)
    before = view(db, "killed")
    assert before["status"] == "interrupted"
    assert [p["name"] for p in before["phases"] if p["state"] == "partial"] == [partial_phase]
    saved_steps = before["frontier"]["steps_done"]
    assert saved_steps > 0

    # The usual start sequence finds the checkpoints and carries on.
    with Engine(db) as eng:
        outcome = eng.run(module.wf, "killed")
    assert str(outcome.status) == "completed", outcome
    assert partial_phase == outcome.phases_run[0]
    after = view(db, "killed")
    assert after["status"] == "completed"
    assert [p["state"] for p in after["phases"]] == ["done"] * len(module.wf.phases)
    assert _result(module, inputs) == _result(module, ref_inputs)
    if module is billing:
        # The gateway charged each invoice once, even the one killed mid-charge.
        keys = ledger_keys(Path(inputs["workdir"]) / "gateway")
        assert len(keys) == len(set(keys)) == 4
