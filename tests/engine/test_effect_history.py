"""Effect records are part of the verified history (#11): deleting, editing,
re-ordering or forging one stops the run as `integrity`, names the effect,
and never repeats its action. A person's answer for that effect (confirm
with the result the gateway shows, or retry when it shows nothing) settles
it, and the run completes with each charge made once."""

from __future__ import annotations

import json

import pytest

K0, K1, K2 = (f"r1/charge/charge:inv-{i}" for i in range(3))


def _two_of_three(h):
    """Killed after the second charge, the phase still open: two done records."""
    assert h.run("r1", kill="before:charge:inv-2").killed
    assert h.charge_keys() == [K0, K1]


def _blocked_on(h, key: str, problem: str) -> dict:
    before = h.charge_keys()
    p = h.resume("r1")
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert h.charge_keys() == before  # nothing was charged again
    st = h.status("r1")
    assert st["status"] == "blocked"
    hits = [b for b in st["blocked"] if b["kind"] == "integrity" and b.get("effect") == key]
    assert hits and hits[0]["problem"] == problem, st["blocked"]
    v = h.cli("verify", "--json")
    assert v.returncode == 3
    (report,) = [r for r in json.loads(v.stdout) if r["run_id"] == "r1"]
    assert not report["ok"] and any(d["effect"] == key for d in report["effects"])
    return st


def _receipt(h, key: str) -> str:
    (c,) = [c for c in h.charges() if c["key"] == key]
    return json.dumps({"charge_id": c["charge_id"], "amount": c["amount"], "replayed": False})


def _settle(h, key: str, *answer: str) -> None:
    assert h.decide("r1", *answer, "--effect", key, reason="checked the gateway").returncode == 0
    p = h.resume("r1")
    if p.returncode == 3 and K2 not in h.charge_keys() and f"key {K2})" in p.stdout:
        # the kill left the third charge in doubt, never sent: the gateway has none
        assert h.decide("r1", "retry_effect", "--effect", K2, reason="not at the gateway").returncode == 0
        p = h.resume("r1")
    assert p.returncode == 0, (p.stdout, p.stderr)
    keys = h.charge_keys()
    assert sorted(keys) == [K0, K1, K2], keys  # every charge exactly once
    assert h.cli("verify").returncode == 0


def test_a_deleted_completion_of_an_open_phase_is_not_charged_again(h):
    """Finding 2, as filed: the completion of the first charge is deleted."""
    _two_of_three(h)
    h.sql("UPDATE phasegate_effects SET state = 'intent', result_json = NULL, result_hash = NULL WHERE key = ?", (K0,))
    _blocked_on(h, K0, "edited")
    _settle(h, K0, "confirm_effect", "--result", _receipt(h, K0))


def test_a_deleted_record_is_named_by_the_next_one(h):
    _two_of_three(h)
    h.sql("DELETE FROM phasegate_effects WHERE key = ?", (K0,))
    _blocked_on(h, K0, "missing")
    _settle(h, K0, "confirm_effect", "--result", _receipt(h, K0))


def test_the_last_record_deleted_is_named_by_the_run(h):
    _two_of_three(h)
    h.sql("DELETE FROM phasegate_effects WHERE key = ?", (K1,))
    _blocked_on(h, K1, "missing")
    _settle(h, K1, "confirm_effect", "--result", _receipt(h, K1))


def test_an_edited_result_is_seen_even_with_its_hash_recomputed(h):
    _two_of_three(h)
    import hashlib

    text = json.dumps({"charge_id": "forged", "amount": 1})
    digest = hashlib.sha256(text.encode()).hexdigest()
    h.sql("UPDATE phasegate_effects SET result_json = ?, result_hash = ? WHERE key = ?", (text, digest, K1))
    _blocked_on(h, K1, "edited")
    _settle(h, K1, "confirm_effect", "--result", _receipt(h, K1))


@pytest.mark.parametrize(
    "forgery",
    [
        "UPDATE phasegate_effects SET retry_ok = TRUE WHERE key = ?",
        "UPDATE phasegate_effects SET attempt = attempt + 1 WHERE key = ?",
        "UPDATE phasegate_effects SET idempotent = TRUE WHERE key = ?",
    ],
    ids=["retry-permission", "attempt", "idempotent"],
)
def test_a_forged_permission_to_call_again_is_refused(h, forgery):
    """The in-doubt charge went through at the gateway; a forged permission
    would have charged it twice."""
    assert h.run("r1", kill="after:charge:inv-1").killed
    h.sql(forgery, (K1,))
    _blocked_on(h, K1, "edited")
    _settle(h, K1, "confirm_effect", "--result", _receipt(h, K1))


def test_a_forged_completion_of_an_in_doubt_effect_is_refused(h):
    """The charge never reached the gateway; a forged 'done' would skip it."""
    assert h.run("r1", kill="before:charge:inv-1").killed
    h.sql(
        "UPDATE phasegate_effects SET state = 'done', result_json = 'null',"
        " result_hash = '74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b' WHERE key = ?",
        (K1,),
    )
    _blocked_on(h, K1, "edited")
    _settle(h, K1, "retry_effect")


def test_an_inserted_record_is_not_in_the_history(h):
    """A record copied in for a charge that never happened would skip it."""
    _two_of_three(h)
    h.sql("DELETE FROM phasegate_effects WHERE key = ?", (K2,))  # its intent, never sent
    cols = "run_id, phase, name, state, idempotent, atomic, attempt, retry_ok, intent_at, done_at, result_json,"
    cols += " result_hash, prev_key, seal, reconcilable, redo_on_rewind"
    h.sql(
        f"INSERT INTO phasegate_effects (key, {cols}) SELECT ?, {cols.replace('name,', '?,')} FROM phasegate_effects"
        " WHERE key = ?",
        (K2, "charge:inv-2", K1),
    )
    _blocked_on(h, K2, "edited")  # its seal covers its key: a copy is not a record
    _settle(h, K2, "retry_effect")


def test_reordered_records_are_seen(h):
    _two_of_three(h)
    h.sql("UPDATE phasegate_effects SET prev_key = NULL WHERE key = ?", (K1,))
    h.sql("UPDATE phasegate_effects SET prev_key = ? WHERE key = ?", (K1, K0))
    p = h.resume("r1")
    assert p.returncode == 3 and h.charge_keys() == [K0, K1]
    st = h.status("r1")
    assert {b.get("effect") for b in st["blocked"] if b["kind"] == "integrity"} == {K0, K1}


def test_degrade_does_not_fit_damaged_effects_and_a_wrong_key_is_refused(h):
    _two_of_three(h)
    h.sql("DELETE FROM phasegate_effects WHERE key = ?", (K0,))
    _blocked_on(h, K0, "missing")
    before = h.dump()
    p = h.decide("r1", "degrade")
    assert p.returncode == 2 and "confirm_effect" in p.stderr
    p = h.decide("r1", "retry_effect", "--effect", "charge:inv-7")
    assert p.returncode == 2 and "not among the damaged" in p.stderr
    p = h.decide("r1", "confirm_effect", "--effect", K0)
    assert p.returncode == 2 and "--result" in p.stderr
    assert h.dump() == before


def test_records_deleted_with_everything_that_named_them_are_still_counted(h):
    """Found by the state machine: both records deleted, the last one too.
    Only the last is named (by the run row); the run's record count says one
    more is gone, and the operator names it from the gateway's records."""
    assert h.run("r1", kill="after:charge:inv-1").killed  # inv-0 done, inv-1 in doubt (charged)
    h.sql("DELETE FROM phasegate_effects WHERE key IN (?, ?)", (K0, K1))
    before = h.charge_keys()
    assert h.resume("r1").returncode == 3 and h.charge_keys() == before
    st = h.status("r1")
    assert {b.get("effect") for b in st["blocked"]} == {K1, "?"}
    p = h.decide("r1", "confirm_effect", "--result", "{}")
    assert p.returncode == 2 and "name the effect" in p.stderr
    assert h.decide("r1", "confirm_effect", "--effect", K1, "--result", _receipt(h, K1)).returncode == 0
    assert h.resume("r1").returncode == 3 and h.charge_keys() == before  # still one nobody named
    assert {b.get("effect") for b in h.status("r1")["blocked"]} == {"?"}
    assert (
        h.decide("r1", "confirm_effect", "--effect", "charge/charge:inv-0", "--result", _receipt(h, K0)).returncode == 0
    )
    p = h.resume("r1")
    assert p.returncode == 0, p.stdout
    assert sorted(h.charge_keys()) == [K0, K1, K2]
