"""Damage to the stored chain is found before anything runs, named, and
recoverable by an operator without repeating an effect."""

from __future__ import annotations

import json

import pytest


def _flip(text: str, at: int | None = None) -> str:
    i = len(text) // 2 if at is None else at
    c = text[i]
    return text[:i] + ("0" if c != "0" else "1") + text[i + 1 :]


def _seq(h, run_id: str, phase: str) -> int:
    return int(h.checkpoint(run_id, phase)["seq"])


def flip_envelope(h):
    env = h.checkpoint("r1", "price")["envelope"]
    # change a value inside the JSON, keeping it parseable
    h.sql(
        "UPDATE phasegate_checkpoints SET envelope=? WHERE run_id='r1' AND phase='price'",
        (env.replace('"steps_done":1', '"steps_done":7'),),
    )
    return "hash", _seq(h, "r1", "price")


def flip_envelope_bytes(h):
    env = h.checkpoint("r1", "price")["envelope"]
    h.sql("UPDATE phasegate_checkpoints SET envelope=? WHERE run_id='r1' AND phase='price'", (_flip(env, 0) + "\x01",))
    return "hash", _seq(h, "r1", "price")


def flip_output(h):
    out = h.checkpoint("r1", "price")["output_json"]
    h.sql(
        "UPDATE phasegate_checkpoints SET output_json=? WHERE run_id='r1' AND phase='price'",
        (out.replace('"total":200', '"total":900'),),
    )
    return "output", _seq(h, "r1", "price")


def flip_payload_hash(h):
    ph = h.checkpoint("r1", "price")["payload_hash"]
    h.sql("UPDATE phasegate_checkpoints SET payload_hash=? WHERE run_id='r1' AND phase='price'", (_flip(ph),))
    return "hash", _seq(h, "r1", "price")


def flip_prev_hash(h):
    prev = h.checkpoint("r1", "charge")["prev_hash"]
    h.sql("UPDATE phasegate_checkpoints SET prev_hash=? WHERE run_id='r1' AND phase='charge'", (_flip(prev),))
    return "chain", _seq(h, "r1", "charge")


def delete_middle(h):
    seq = _seq(h, "r1", "price")
    h.sql("DELETE FROM phasegate_checkpoints WHERE run_id='r1' AND phase='price'")
    return "chain", seq + 1


def delete_head(h):
    seq = _seq(h, "r1", "charge")
    h.sql("DELETE FROM phasegate_checkpoints WHERE run_id='r1' AND phase='charge'")
    return "head", seq


def splice_other_run(h):
    assert h.run("other", kill="start:report").killed
    seq = _seq(h, "r1", "price")
    h.sql("DELETE FROM phasegate_checkpoints WHERE run_id='r1' AND phase='price'")
    h.sql(
        "INSERT INTO phasegate_checkpoints (run_id, epoch, seq, kind, phase, envelope, payload_hash, prev_hash,"
        " output_json, output_state, output_bytes, archive_path, created_at, status)"
        " SELECT 'r1', epoch, seq, kind, phase, envelope, payload_hash, prev_hash, output_json, output_state,"
        " output_bytes, archive_path, created_at, status FROM phasegate_checkpoints"
        " WHERE run_id='other' AND phase='price'"
    )
    return "identity", seq


DAMAGE = [
    flip_envelope,
    flip_envelope_bytes,
    flip_output,
    flip_payload_hash,
    flip_prev_hash,
    delete_middle,
    delete_head,
    splice_other_run,
]


def _damaged_run(h, damage):
    assert h.run("r1", kill="start:report").killed
    what, seq = damage(h)
    h.clear_trace()
    return what, seq


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.__name__ for d in DAMAGE])
def test_damage_stops_the_run_as_integrity_before_any_phase_runs(h, damage):
    what, seq = _damaged_run(h, damage)
    charges = len(h.charges())

    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "integrity:" in p.stdout
    assert f"checkpoint {seq}" in p.stdout
    assert h.trace() == []  # no phase started
    assert len(h.charges()) == charges
    st = h.status("r1")
    assert st["status"] == "blocked"
    (b,) = st["blocked"]
    assert b["kind"] == "integrity"
    assert b["failure"]["what"] == what and b["failure"]["seq"] == seq
    if what in ("hash", "output", "chain"):
        assert b["failure"]["expected"] and b["failure"]["actual"]
        assert b["failure"]["expected"] != b["failure"]["actual"]

    v = h.cli("verify")
    assert v.returncode == 3, v
    assert "DAMAGED   r1" in v.stdout
    if damage is splice_other_run:
        assert "ok        other" in v.stdout


@pytest.mark.parametrize("damage", [flip_output, delete_middle, delete_head, flip_prev_hash], ids=lambda d: d.__name__)
def test_degrade_after_damage_trusts_the_prefix_and_repeats_no_effect(h, damage):
    expected_keys = sorted(f"r1/charge/charge:inv-{i}" for i in range(3))
    _what, seq = _damaged_run(h, damage)
    assert h.resume("r1").returncode == 3
    p = h.decide("r1", "degrade", reason="accept losing the damaged tail")
    assert p.returncode == 0, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    # The phases from the failed checkpoint on ran again...
    assert h.trace()[0] in {"start:price", "start:charge", "start:report"}
    assert "start:load" not in h.trace()
    # ...but the charges were not repeated: their completion records survive.
    assert sorted(h.charge_keys()) == expected_keys
    st = h.status("r1")
    assert st["status"] == "completed"
    assert [ph["state"] for ph in st["phases"]] == ["done"] * 4
    assert h.cli("verify").returncode == 0
    assert [d["state"] for d in st["decisions"]] == ["applied"]


@pytest.mark.parametrize("damage", [flip_envelope, splice_other_run], ids=lambda d: d.__name__)
def test_rewind_after_damage_reruns_from_the_phase(h, damage):
    _damaged_run(h, damage)
    assert h.resume("r1").returncode == 3
    p = h.decide("r1", "rewind", "--phase", "load", reason="rebuild from the start")
    assert p.returncode == 0, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:load", "start:price", "start:charge", "start:report"]
    keys = [k for k in h.charge_keys() if k.startswith("r1/")]
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 3
    assert h.cli("verify").returncode == 0


def test_future_schema_version_is_integrity_and_nothing_is_written(h):
    assert h.run("r1", kill="start:report").killed
    h.sql("UPDATE phasegate_meta SET value='99' WHERE key='schema_version'")
    h.clear_trace()
    before = h.dump()

    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "integrity" in p.stdout and "schema version 99" in p.stdout
    assert h.trace() == []
    v = h.cli("verify")
    assert v.returncode == 3 and "schema version 99" in v.stdout
    assert h.dump() == before


def test_future_schema_refuses_decisions_and_prune(h):
    assert h.run("r1", kill="start:report").killed
    h.sql("UPDATE phasegate_meta SET value='99' WHERE key='schema_version'")
    before = h.dump()
    p = h.decide("r1", "reset", reason="try anyway")
    assert p.returncode in (2, 3), p
    assert "schema" in p.stderr
    h.cli("prune", "--apply")
    assert h.dump() == before


def test_verify_names_every_damaged_run_and_passes_clean_ones(h):
    assert h.run("good").returncode == 0
    assert h.run("r1", kill="start:report").killed
    flip_output(h)
    p = h.cli("verify", "--json")
    assert p.returncode == 3
    reports = {r["run_id"]: r for r in json.loads(p.stdout)}
    assert reports["good"]["ok"] is True
    assert reports["r1"]["ok"] is False and reports["r1"]["failure"]["what"] == "output"
    # What verify found is on the run before anyone resumes it.
    st = h.status("r1")
    assert st["status"] == "blocked" and st["blocked"][0]["kind"] == "integrity"


def test_damaged_inputs_stop_the_run_and_verify_names_them(h):
    assert h.run("r1", kill="start:charge").killed
    h.sql('UPDATE phasegate_runs SET inputs_json=replace(inputs_json, \'"ledger"\', \'"invoices":9,"ledger"\')')
    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 3 and "integrity" in p.stdout and "inputs" in p.stdout, p
    assert h.trace() == [] and h.charges() == []
    v = h.cli("verify", "--json")
    assert v.returncode == 3
    (r,) = json.loads(v.stdout)
    assert r["run_id"] == "r1" and r["failure"]["what"] == "inputs"


def test_a_damaged_effect_record_stops_the_run_without_charging_again(h):
    assert h.run("r1", kill="after:charge:inv-1", idempotent=True).killed
    h.sql("UPDATE phasegate_effects SET result_json=replace(result_json, 'ch_', 'xx_') WHERE name='charge:inv-0'")
    charges = len(h.charges())
    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "integrity" in p.stdout and "charge:inv-0" in p.stdout
    assert len(h.charges()) == charges


def test_verify_checks_hashes_by_default_and_parses_outputs_with_deep(h):
    """A forged head whose output does not parse but whose hashes were all
    recomputed: plain verify (hashes and links, at hashing speed) passes it;
    --deep parses every output and names it."""
    import hashlib

    assert h.run("r1", kill="start:report").killed
    row = h.checkpoint("r1", "charge")
    forged = '{"charged":['
    env = json.loads(row["envelope"])
    env["output_hash"] = hashlib.sha256(forged.encode()).hexdigest()
    envelope = json.dumps(env, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(envelope.encode()).hexdigest()
    h.sql(
        "UPDATE phasegate_checkpoints SET output_json=?, envelope=?, payload_hash=? WHERE run_id='r1' AND phase='charge'",
        (forged, envelope, digest),
    )
    h.sql("UPDATE phasegate_runs SET head_hash=? WHERE run_id='r1'", (digest,))

    plain = h.cli("verify", "--json")
    assert plain.returncode == 0, plain
    assert [r["ok"] for r in json.loads(plain.stdout)] == [True]
    deep = h.cli("verify", "--deep")
    assert deep.returncode == 3, deep
    assert "DAMAGED   r1: checkpoint" in deep.stdout and "output does not parse" in deep.stdout
    st = h.status("r1")
    assert st["status"] == "blocked" and st["blocked"][0]["failure"]["what"] == "parse"


def test_an_answer_waiting_when_the_record_was_damaged_gives_way_to_the_repair(h):
    """An operator answered an effect in doubt (retry: it never happened);
    before the run resumed, the effect's record was edited. The answer was
    given on a record that is gone, so it is not carried out, and it does not
    stand in the way: the person answers the damage, the repair is applied
    and the old answer is settled void, and the run completes, each charge once.
    (Found by tests/reliability/test_no_dead_ends.py, where only rewind or
    reset was left.)"""
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.charge_keys() == ["r1/charge/charge:inv-0"]
    assert h.decide("r1", "retry_effect", "--effect", "charge:inv-1").returncode == 0
    h.sql("UPDATE phasegate_effects SET retry_ok = TRUE WHERE key = ?", ("r1/charge/charge:inv-1",))
    p = h.resume("r1")
    assert p.returncode == 3 and "integrity" in p.stdout and "charge:inv-1" in p.stdout, p
    d = h.decide("r1", "retry_effect", "--effect", "charge:inv-1", reason="the gateway has no such charge")
    assert d.returncode == 0, d.stderr
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert sorted(h.charge_keys()) == [f"r1/charge/charge:inv-{i}" for i in range(3)]
    st = h.status("r1")
    states = {d["id"]: d["state"] for d in st["decisions"]}
    assert states == {1: "void", 2: "applied"}, st["decisions"]
    assert any("answered effect r1/charge/charge:inv-1 anew; 1 void" in n for n in st.get("notes", [])), st


def test_a_confirmed_effect_whose_record_was_damaged_is_repaired_not_corrected(h):
    """A person confirmed an effect; its record was then edited. A new answer
    for it repairs the record (applied at the next start) instead of being
    taken as a correction, which would wait behind the damage for ever."""
    assert h.run("r1", kill="after:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    result = json.dumps({"charge_id": "ch-inv-1", "amount": 101, "replayed": False})
    assert h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", result).returncode == 0
    # The confirmation is applied; the run goes on; kill it before it ends.
    assert h.resume("r1", kill="before:charge:inv-2").killed
    h.sql("UPDATE phasegate_effects SET retry_ok = TRUE WHERE key = ?", ("r1/charge/charge:inv-1",))
    p = h.resume("r1")
    assert p.returncode == 3, p
    d = h.decide("r1", "confirm_effect", "--effect", "charge:inv-1", "--result", result)
    assert d.returncode == 0, d.stderr
    (last,) = [x for x in h.status("r1")["decisions"] if x["id"] == max(y["id"] for y in h.status("r1")["decisions"])]
    assert last["answers"] == "integrity", last
