"""Partial state beats no state: a lost output is re-derived where its
producer's inputs survive, a phase runs degraded (ctx.missing) when only a
non-floor need is gone, and the run stops `below_floor` when neither holds."""

from __future__ import annotations

import json

import pytest
from engine_harness import HERE_WORKFLOWS

FLOORS = f"{HERE_WORKFLOWS / 'floors.py'}:wf"


def lose(h, run_id: str, phase: str, how: str = "null") -> None:
    """Simulated damage: the output is gone, the chain itself is intact."""
    if how == "null":
        h.sql("UPDATE phasegate_checkpoints SET output_json=NULL WHERE run_id=? AND phase=?", (run_id, phase))
    else:
        h.sql(
            "UPDATE phasegate_checkpoints SET output_json=NULL, output_state='pruned' WHERE run_id=? AND phase=?",
            (run_id, phase),
        )


@pytest.mark.parametrize("how", ["null", "pruned"])
def test_lost_output_is_rederived_from_its_producers_inputs(h, how, clean_report_hash):
    expected = clean_report_hash
    assert h.run("r1", kill="start:report").killed
    lose(h, "r1", "charge", how)
    charges = len(h.charges())
    h.clear_trace()

    p = h.resume("r1")
    assert p.returncode == 0, p
    # charge is re-derived (its input, price, survived); load and price are not redone.
    assert h.trace() == ["start:charge", "start:report"]
    # Its effects were done: re-deriving returns their saved results, nothing is charged again.
    assert len(h.charges()) == charges
    st = h.status("r1")
    assert any("re-deriving" in n and "charge" in n for n in st["notes"]), st["notes"]
    assert h.report_hash("r1") == expected


def test_rederiving_a_phase_reuses_its_durable_steps(h):
    assert h.run("r1", kill="start:charge").killed
    lose(h, "r1", "price")
    h.clear_trace()
    assert h.resume("r1").returncode == 0
    assert h.trace() == ["start:price", "start:charge", "start:report"]
    assert h.sql("SELECT count(*) FROM phasegate_steps WHERE run_id='r1' AND step_key='price_all'") == [(1,)]


def test_lost_non_floor_need_runs_degraded_with_ctx_missing(h):
    assert h.run("r1", kill="start:report").killed
    lose(h, "r1", "load")
    h.clear_trace()

    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:report"]
    report = json.loads(h.checkpoint("r1", "report")["output_json"])
    assert report == {"charged": 3, "total": 606, "invoices": None, "missing": ["load"]}
    st = h.status("r1")
    phases = {ph["name"]: ph for ph in st["phases"]}
    assert phases["report"]["state"] == "degraded" and phases["report"]["missing"] == ["load"]
    outputs = {o["phase"]: o["state"] for o in st["outputs"]}
    assert outputs["load"] == "lost"


def test_below_floor_blocks_when_the_output_cannot_be_rederived(h):
    assert h.run("r1", target=FLOORS, kill="start:enrich").killed
    lose(h, "r1", "fetch")
    h.clear_trace()
    before = h.dump()

    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "below_floor: phase enrich cannot start: its floor needs the output of fetch" in p.stdout
    assert h.trace() == []
    st = h.status("r1")
    (b,) = st["blocked"]
    assert (b["kind"], b["phase"], b["lost"]) == ("below_floor", "enrich", "fetch")
    # A second look changes nothing but the lease bookkeeping.
    assert h.resume("r1").returncode == 3
    assert h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE run_id='r1'") == [(1,)]
    assert before.count('INSERT INTO "phasegate_checkpoints"') == h.dump().count('INSERT INTO "phasegate_checkpoints"')


def test_degrade_skips_what_is_below_its_floor_and_names_the_gaps(h):
    assert h.run("r1", target=FLOORS, kill="start:enrich").killed
    lose(h, "r1", "fetch")
    assert h.resume("r1").returncode == 3
    h.clear_trace()

    p = h.decide("r1", "degrade", reason="report without enrichment")
    assert p.returncode == 0, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:report"]
    report = json.loads(h.checkpoint("r1", "report")["output_json"])
    assert report == {"sum": None, "as_of": None, "missing": ["enrich", "fetch"]}
    st = h.status("r1")
    assert st["status"] == "completed"
    phases = {ph["name"]: ph["state"] for ph in st["phases"]}
    assert phases == {"fetch": "done", "enrich": "degraded", "report": "degraded"}
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("degrade", "applied")]


def test_rewind_past_a_lost_unrederivable_output(h):
    assert h.run("r1", target=FLOORS, kill="start:enrich", as_of="t1").killed
    lose(h, "r1", "fetch")
    assert h.resume("r1").returncode == 3
    h.clear_trace()
    assert h.decide("r1", "rewind", "--phase", "fetch", reason="fetch a fresh snapshot").returncode == 0
    assert h.resume("r1").returncode == 0
    assert h.trace() == ["start:fetch", "start:enrich", "start:report"]
    report = json.loads(h.checkpoint("r1", "report")["output_json"])
    assert report == {"sum": 60, "as_of": "t1", "missing": []}
