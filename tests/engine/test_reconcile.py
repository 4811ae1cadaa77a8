"""Reconcile hooks (#11): a resume that finds a charge in doubt asks the
gateway, and acts on its answer; every automatic resolution is in the
decision log with `phasegate` as the operator and the answer as evidence."""

from __future__ import annotations

import json

import pytest

K1 = "r1/charge/charge:inv-1"


def _env(mode: str, **extra: str) -> dict[str, str]:
    return {"PHASEGATE_TEST_RECONCILE": mode, **extra}


def _auto_decisions(st: dict) -> list[tuple[str, str, str]]:
    return [(d["action"], d["operator"], d["state"]) for d in st["decisions"]]


def test_done_records_the_gateways_receipt_and_charges_nothing_again(h):
    assert h.run("r1", kill="after:charge:inv-1", env=_env("ledger")).killed
    p = h.resume("r1", env=_env("ledger"))
    assert p.returncode == 0, (p.stdout, p.stderr)
    keys = h.charge_keys()
    assert sorted(keys) == sorted(set(keys)) and len(keys) == 3
    st = h.status("r1")
    assert _auto_decisions(st) == [("confirm_effect", "phasegate", "applied")]
    assert "reconcile hook" in st["decisions"][0]["reason"]
    eff = {e["key"]: e for e in st["effects"]}[K1]
    assert eff["state"] == "done" and eff["reconcile"]["answer"] == "done"
    (charged,) = [c for c in h.charges() if c["key"] == K1]
    assert charged["charge_id"] in h.checkpoint("r1", "charge")["output_json"]


def test_not_done_calls_the_effect_again_with_the_same_key(h):
    assert h.run("r1", kill="before:charge:inv-1", env=_env("ledger")).killed
    assert K1 not in h.charge_keys()
    p = h.resume("r1", env=_env("ledger"))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert sorted(h.charge_keys()) == [f"r1/charge/charge:inv-{i}" for i in range(3)]
    st = h.status("r1")
    assert _auto_decisions(st) == [("retry_effect", "phasegate", "applied")]
    eff = {e["key"]: e for e in st["effects"]}[K1]
    assert eff["attempt"] == 2 and eff["reconcile"]["answer"] == "not_done"


@pytest.mark.parametrize(
    "mode,words",
    [("unknown", "lookup is down"), ("raise", "ConnectionError"), ("hang", "did not answer within")],
)
def test_unknown_stops_for_a_person_and_says_what_the_hook_said(h, mode, words):
    env = _env(mode, PHASEGATE_TEST_RECONCILE_TIMEOUT="0.5")
    assert h.run("r1", kill="after:charge:inv-1", env=env).killed
    p = h.resume("r1", env=env)
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "in_doubt_effect" in p.stdout and words in p.stdout
    st = h.status("r1")
    assert st["decisions"] == []  # nothing was decided for the operator
    eff = {e["key"]: e for e in st["effects"]}[K1]
    assert eff["reconcile"]["answer"] == "unknown" and words in eff["reconcile"]["why"]
    text = h.cli("status", "r1").stdout
    assert "reconcile" in text and words in text
    # a person answers, as without a hook
    (c,) = [c for c in h.charges() if c["key"] == K1]
    receipt = json.dumps({"charge_id": c["charge_id"], "amount": c["amount"], "replayed": False})
    assert h.decide("r1", "confirm_effect", "--effect", K1, "--result", receipt).returncode == 0
    assert h.resume("r1", env=env).returncode == 0
    assert len(h.charge_keys()) == 3


def test_without_a_hook_the_run_blocks_before_any_phase(h):
    assert h.run("r1", kill="after:charge:inv-1").killed
    h.clear_trace()
    assert h.resume("r1").returncode == 3
    assert h.trace() == []  # blocked by the start sequence, nothing ran
