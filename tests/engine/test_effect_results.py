"""A confirmation carries the effect's result, and a person's confirmation
can be corrected (#11): through the command line, with the process killed
after the gateway took a non-idempotent charge."""

from __future__ import annotations

import json

from engine_harness import BILLING_FILE, one_line_error

RECEIPTS = f"{BILLING_FILE}:receipts"
KEY = "r1/collect/charge:inv-1"


def _in_doubt(h):
    assert h.run("r1", target=RECEIPTS, kill="after:charge:inv-1").killed
    assert h.resume("r1").returncode == 3  # blocked: in_doubt_effect
    taken = [c for c in h.charges() if c["key"] == KEY]
    assert len(taken) == 1  # the gateway did charge
    return taken[0]


def _summary(h) -> dict:
    out = h.checkpoint("r1", "summary")["output_json"]
    return json.loads(out)


def test_confirm_without_a_result_is_refused_naming_it(h):
    _in_doubt(h)
    before = h.dump()
    for extra in ((), ("--dry-run",)):
        p = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", *extra)
        assert "--result" in one_line_error(p, 2)
    assert h.dump() == before


def test_an_explicit_null_result_is_accepted(h):
    _in_doubt(h)
    p = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", "null")
    assert p.returncode == 0, p.stderr
    st = h.status("r1")
    assert [d["action"] for d in st["decisions"]] == ["confirm_effect"]


def test_a_wrong_confirmation_is_corrected_and_no_charge_goes_twice(h):
    taken = _in_doubt(h)
    wrong = {"charge_id": "ch_typo", "amount": 1}
    assert h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", json.dumps(wrong)).returncode == 0
    assert h.resume("r1").returncode == 0
    assert _summary(h)["charged_total"] == 100 + 1 + 102  # the run went on with what the operator said

    right = {"charge_id": taken["charge_id"], "amount": taken["amount"]}
    p = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", json.dumps(right), "--dry-run")
    assert p.returncode == 0, p.stderr
    assert "Correct the result" in p.stdout and "collect, summary" in p.stdout
    p = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", json.dumps(right), reason="typo")
    assert p.returncode == 0, p.stderr
    p = h.resume("r1")
    assert p.returncode == 0, p.stderr
    assert _summary(h)["charged_total"] == 100 + 101 + 102
    keys = h.charge_keys()
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 3  # nothing reached the gateway twice
    st = h.status("r1")
    assert st["status"] == "completed"
    assert [(d["action"], d["state"]) for d in st["decisions"]] == [
        ("confirm_effect", "applied"),
        ("confirm_effect", "applied"),
    ]


def test_a_null_confirmation_that_fails_the_phase_is_not_a_dead_end(h):
    """Finding 1: a confirmation with a null result made the phase fail for
    good. Now the failed run's confirmation can be corrected."""
    taken = _in_doubt(h)
    assert h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", "null").returncode == 0
    assert h.resume("r1").returncode == 1  # the phase reads receipt["amount"] of None
    assert h.status("r1")["status"] == "failed"
    right = json.dumps({"charge_id": taken["charge_id"], "amount": taken["amount"]})
    assert h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", right).returncode == 0
    assert h.resume("r1").returncode == 0
    assert _summary(h)["charged_total"] == 303
    assert len(h.charge_keys()) == 3


def test_only_a_persons_confirmation_can_be_corrected(h):
    assert h.run("r1", target=RECEIPTS).returncode == 0
    p = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", "{}")
    assert "does not fit" in one_line_error(p, 2)
