"""Operator decisions: rewind and reset re-run work without repeating
completed effects; a decision that does not fit is refused and changes
nothing; a reason is answered once."""

from __future__ import annotations

import pytest

ALL = ["start:load", "start:price", "start:charge", "start:report"]


def _completed(h, run_id="r1"):
    assert h.run(run_id).returncode == 0
    h.clear_trace()
    return h.report_hash(run_id)


def test_rewind_reruns_from_the_phase_without_repeating_effects(h):
    expected = _completed(h)
    p = h.decide("r1", "rewind", "--phase", "price", reason="prices were wrong")
    assert p.returncode == 0, p
    assert "applies at the next run" in p.stdout
    st = h.status("r1")
    assert st["status"] == "completed"  # recorded, not yet applied
    assert [d["state"] for d in st["decisions"]] == ["pending"]

    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ALL[1:]
    assert len(h.charges()) == 3  # the charges' completion records outlive the rewind
    st = h.status("r1")
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("rewind", "applied")]
    assert h.report_hash("r1") == expected
    # The superseded outputs are now prunable as having no future value.
    assert any("superseded" in c["why_safe"] for c in st["prune_candidates"])
    assert h.cli("verify").returncode == 0


def test_reset_starts_over_from_the_original_inputs(h):
    expected = _completed(h)
    p = h.decide("r1", "reset", reason="start clean")
    assert p.returncode == 0, p
    st = h.status("r1")
    assert st["status"] == "reset"
    assert [ph["state"] for ph in st["phases"]] == ["open"] * 4
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("reset", "applied")]
    assert h.cli("verify").returncode == 0

    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ALL
    assert len(h.charges()) == 3  # keys persist across the reset: no charge is repeated
    st = h.status("r1")
    assert st["status"] == "completed" and st["epoch"] == 1
    assert st["inputs"] == {"ledger": str(h.ledger)}
    assert h.report_hash("r1") == expected
    # The old epoch's checkpoints are kept (archived), not deleted.
    assert h.sql("SELECT count(*) FROM phasegate_checkpoints WHERE run_id='r1' AND epoch=0 AND status='archived'") == [
        (4,)
    ]


def test_reset_of_a_blocked_run_voids_its_pending_decisions(h):
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("v2")
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "approve", reason="fine").returncode == 0
    assert h.decide("r1", "reset", reason="no, start over").returncode == 0
    st = h.status("r1")
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [("approve", "void"), ("reset", "applied")]
    h.clear_trace()
    assert h.resume("r1").returncode == 0
    assert h.trace() == ALL


def test_in_doubt_effect_can_be_answered_while_the_run_is_interrupted(h):
    assert h.run("r1", kill="after:charge:inv-1").killed
    assert h.status("r1")["status"] == "interrupted"
    assert (
        h.decide(
            "r1", "confirm_effect", "--effect", "charge:inv-1", "--result", '{"charge_id": "ch-1"}', reason="seen"
        ).returncode
        == 0
    )
    assert h.resume("r1").returncode == 0
    keys = h.charge_keys()
    assert len(keys) == 3 and len(set(keys)) == 3


def _refused(h, *args, code=2, words=()):
    before = h.dump()
    p = h.decide(*args)
    line = h.one_line_error(p, code)
    for w in words:
        assert w in line, line
    assert h.dump() == before
    return line


@pytest.mark.parametrize(
    "args,words",
    [
        (("r1", "approve"), ("approve does not fit", "not blocked")),
        (("r1", "confirm_effect"), ("confirm_effect does not fit",)),
        (("r1", "degrade"), ("degrade does not fit",)),
        (("r1", "rewind"), ("rewind needs the phase to re-run from (--phase NAME)",)),
        (("r1", "rewind", "--phase", "nope"), ("no phase 'nope'",)),
        (("r1", "launch"), ("unknown action 'launch'",)),
        (("nope", "reset"), ("no run 'nope'",)),
    ],
    ids=[
        "approve-completed",
        "confirm-completed",
        "degrade-completed",
        "rewind-no-phase",
        "rewind-bad-phase",
        "unknown-action",
        "unknown-run",
    ],
)
def test_decisions_that_do_not_fit_a_completed_run_are_refused(h, args, words):
    _completed(h)
    _refused(h, *args, words=words)


def test_decisions_that_do_not_fit_why_it_is_blocked_are_refused(h):
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("v2")
    assert h.resume("r1").returncode == 3  # env_mismatch
    _refused(h, "r1", "confirm_effect", words=("env_mismatch",))
    _refused(h, "r1", "retry_effect", words=("env_mismatch",))
    _refused(h, "r1", "degrade", words=("env_mismatch",))
    before = h.dump()
    p = h.cli("decide", "r1", "approve", "--reason", "   ")
    assert "needs a reason" in h.one_line_error(p)
    assert h.dump() == before


def test_effect_decision_must_name_an_effect_in_doubt(h):
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    _refused(h, "r1", "retry_effect", "--effect", "charge:inv-0", words=("not in doubt",))


def test_a_second_decision_for_the_same_reason_is_refused(h):
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("v2")
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "approve", reason="first").returncode == 0
    line = _refused(h, "r1", "approve", words=("already decided", "approve by tester"))
    assert line.startswith("phasegate: already decided:")
    # A rewind is its own kind of answer, and one may wait at a time.
    assert h.decide("r1", "rewind", "--phase", "price", reason="rather re-price").returncode == 0
    _refused(h, "r1", "rewind", "--phase", "load", words=("already",))


def test_two_answers_to_one_effect_in_doubt(h):
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "retry_effect", reason="not at the gateway").returncode == 0
    _refused(h, "r1", "confirm_effect", words=("already decided", "retry_effect"))
    assert h.resume("r1").returncode == 0
    assert len(h.charges()) == 3


def test_reset_twice_is_refused(h):
    _completed(h)
    assert h.decide("r1", "reset", reason="once").returncode == 0
    _refused(h, "r1", "reset", words=("already been reset",))


def test_dry_run_records_nothing(h):
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    before = h.dump()
    p = h.cli("decide", "r1", "retry_effect", "--reason", "x", "--dry-run")
    assert p.returncode == 0 and "r1/charge/charge:inv-1" in p.stdout
    assert h.dump() == before
