"""`Engine.verify`'s typed reports print as `verify --json` always printed
them: the same keys, in the same order, `effects` only when there is some."""

from __future__ import annotations

import json

from phasegate import EffectDamage, IntegrityFailure, LostOutput, UnknownSchema, VerifyReport


def test_a_clean_run_has_no_effects_key() -> None:
    r = VerifyReport("r1", checkpoints=3, bytes=120)
    assert r.ok
    assert json.dumps(r.to_json()) == (
        '{"run_id": "r1", "ok": true, "checkpoints": 3, "bytes": 120, "failure": null, "lost": []}'
    )


def test_a_lost_output_leaves_the_run_ok() -> None:
    r = VerifyReport("r1", 2, 80, lost=(LostOutput("price", 1, "output of price is lost: gone"),))
    assert r.ok
    assert r.to_json()["lost"] == [{"phase": "price", "seq": 1, "message": "output of price is lost: gone"}]


def test_a_damaged_chain_and_effect_records() -> None:
    f = IntegrityFailure(1, "price", "output", "a", "b", "output hash mismatch")
    d = EffectDamage("r1/charge/c", "edited", "effect record r1/charge/c was changed")
    r = VerifyReport("r1", 2, 80, failure=f, effects=(d,))
    assert not r.ok and not VerifyReport("r1", 2, 80, effects=(d,)).ok
    out = r.to_json()
    assert list(out) == ["run_id", "ok", "checkpoints", "bytes", "failure", "lost", "effects"]
    assert out["ok"] is False and out["failure"] == f.as_dict() and out["effects"] == [d.as_dict()]


def test_a_store_of_an_unknown_schema_is_one_report() -> None:
    r = UnknownSchema("schema version 9 is newer than this engine knows (3)")
    assert r.run_id is None and r.ok is False
    assert r.to_json() == {
        "run_id": None,
        "ok": False,
        "failure": {"what": "schema", "message": "schema version 9 is newer than this engine knows (3)"},
    }
