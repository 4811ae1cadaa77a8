"""SIGKILL at chosen points, then resume: finished phases stay finished, no
charge reaches the gateway twice, and the result is an uninterrupted run's."""

from __future__ import annotations

import json

import pytest

KEYS = ["charge:inv-0", "charge:inv-1", "charge:inv-2"]
PHASES = ["start:load", "start:price", "start:charge", "start:report"]


def _keys(h, run_id: str) -> list[str]:
    return sorted(k for k in h.charge_keys() if k.startswith(run_id + "/"))


# (kill point, phases started before the kill, phases a resume must start)
POINTS = [
    ("start:price", ["start:load", "start:price"], ["start:price", "start:charge", "start:report"]),
    ("step:price_all", ["start:load", "start:price"], ["start:price", "start:charge", "start:report"]),
    ("start:charge", ["start:load", "start:price", "start:charge"], ["start:charge", "start:report"]),
    ("start:report", PHASES, ["start:report"]),
]


@pytest.mark.parametrize("point,before,after", POINTS, ids=[p[0] for p in POINTS])
def test_kill_at_a_phase_boundary_or_mid_phase_then_resume(h, point, before, after, clean_report_hash):
    expected = clean_report_hash

    p = h.run("r1", kill=point)
    assert p.killed, p
    assert h.trace() == before
    st = h.status("r1")
    assert st["status"] == "interrupted"
    done_before = [ph["name"] for ph in st["phases"] if ph["state"] == "done"]

    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert p.stdout.strip() == "r1: completed"
    # Phases reported done before the kill are not run again.
    assert h.trace() == after
    assert not {f"start:{n}" for n in done_before} & set(h.trace())
    st = h.status("r1")
    assert st["status"] == "completed"
    assert [ph["state"] for ph in st["phases"]] == ["done"] * 4
    assert _keys(h, "r1") == sorted(f"r1/charge/{k}" for k in KEYS)
    assert h.report_hash("r1") == expected


def test_a_durable_step_completed_before_the_kill_is_not_run_again(h):
    p = h.run("r1", kill="step:price_all")
    assert p.killed
    assert h.sql("SELECT count(*) FROM phasegate_steps WHERE run_id='r1' AND step_key='price_all'") == [(1,)]
    st = h.status("r1")
    price = next(ph for ph in st["phases"] if ph["name"] == "price")
    assert price["state"] == "partial"
    assert st["frontier"]["phase"] == "price" and st["frontier"]["steps_done"] == 1

    assert h.resume("r1").returncode == 0
    # The phase was redone from its start, but its durable step returned the
    # saved result instead of running (running it would insert a second record).
    assert h.sql("SELECT count(*) FROM phasegate_steps WHERE run_id='r1' AND step_key='price_all'") == [(1,)]


def test_real_entry_point_killed_mid_charge_then_resumed(h):
    """The same story through `python -m phasegate`, the way a deploy runs it."""
    p = h.run("r1", kill="start:report", real=True)
    assert p.returncode == -9
    h.clear_trace()
    p = h.resume("r1", real=True)
    assert p.returncode == 0, p
    assert h.trace() == ["start:report"]
    assert len(h.charge_keys()) == 3


@pytest.mark.parametrize("point", ["before:charge:inv-1", "after:charge:inv-1"])
def test_idempotent_effect_is_called_again_with_the_same_key(h, point, clean_report_hash):
    expected = clean_report_hash
    p = h.run("r1", kill=point, idempotent=True)
    assert p.killed
    st = h.status("r1")
    eff = {e["name"]: e for e in st["effects"]}
    assert eff["charge:inv-0"]["state"] == "done"
    assert eff["charge:inv-1"]["state"] == "intent"  # idempotent: never in doubt
    seen = len(_keys(h, "r1"))
    assert seen == (1 if point.startswith("before") else 2)

    p = h.resume("r1")
    assert p.returncode == 0, p
    # Re-called with the same key: the gateway deduplicated, so one charge per invoice.
    assert _keys(h, "r1") == sorted(f"r1/charge/{k}" for k in KEYS)
    effects = {e["name"]: e for e in h.status("r1")["effects"]}
    assert effects["charge:inv-1"]["attempt"] == 2
    assert effects["charge:inv-1"]["key"] == "r1/charge/charge:inv-1"
    assert h.report_hash("r1") == expected


@pytest.mark.parametrize("point", ["before:charge:inv-1", "after:charge:inv-1"])
def test_non_idempotent_effect_in_doubt_blocks_the_resume(h, point):
    p = h.run("r1", kill=point)
    assert p.killed
    st = h.status("r1")
    assert st["status"] == "interrupted"
    assert {e["name"]: e["state"] for e in st["effects"]} == {"charge:inv-0": "done", "charge:inv-1": "in_doubt"}

    h.clear_trace()
    before = len(h.charges())
    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "in_doubt_effect" in p.stdout and "r1/charge/charge:inv-1" in p.stdout
    assert h.trace() == []  # stopped before the phase ran again
    assert len(h.charges()) == before
    st = h.status("r1")
    assert st["status"] == "blocked"
    assert [b["kind"] for b in st["blocked"]] == ["in_doubt_effect"]
    assert st["blocked"][0]["effect"] == "r1/charge/charge:inv-1"
    # Asking again changes nothing: still blocked, still nothing charged.
    assert h.resume("r1").returncode == 3
    assert len(h.charges()) == before


def test_confirm_effect_when_the_gateway_did_charge(h, clean_report_hash):
    expected = clean_report_hash
    assert h.run("r1", kill="after:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    charged = [c for c in h.charges() if c["key"] == "r1/charge/charge:inv-1"]
    assert len(charged) == 1

    p = h.decide(
        "r1",
        "confirm_effect",
        "--result",
        f'{{"charge_id": "{charged[0]["charge_id"]}"}}',
        reason="gateway dashboard shows the charge",
    )
    assert p.returncode == 0, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert _keys(h, "r1") == sorted(f"r1/charge/{k}" for k in KEYS)  # one charge each
    st = h.status("r1")
    eff = {e["name"]: e for e in st["effects"]}
    assert eff["charge:inv-1"]["state"] == "done" and eff["charge:inv-1"]["confirmed_by"] is not None
    charge_out = h.checkpoint("r1", "charge")["output_json"]
    assert charged[0]["charge_id"] in charge_out
    assert [(d["action"], d["operator"], d["state"]) for d in st["decisions"]] == [
        ("confirm_effect", "tester", "applied")
    ]
    assert h.report_hash("r1") == expected


def test_retry_effect_when_the_gateway_never_saw_it(h, clean_report_hash):
    expected = clean_report_hash
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    assert _keys(h, "r1") == ["r1/charge/charge:inv-0"]

    p = h.decide("r1", "retry_effect", "--effect", "charge:inv-1", reason="gateway has no such charge")
    assert p.returncode == 0, p
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert _keys(h, "r1") == sorted(f"r1/charge/{k}" for k in KEYS)  # exactly one charge of inv-1
    eff = {e["name"]: e for e in h.status("r1")["effects"]}
    assert eff["charge:inv-1"]["state"] == "done" and eff["charge:inv-1"]["attempt"] == 2
    assert h.report_hash("r1") == expected


def test_retry_approval_does_not_outlive_the_retry(h):
    """A retry is one more call, not a standing licence: if the retried call is
    itself interrupted, the effect is in doubt again."""
    assert h.run("r1", kill="before:charge:inv-1").killed
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "retry_effect", reason="not at the gateway").returncode == 0
    assert h.resume("r1", kill="after:charge:inv-1").killed
    p = h.resume("r1")
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout
    assert _keys(h, "r1") == ["r1/charge/charge:inv-0", "r1/charge/charge:inv-1"]


def test_running_the_same_command_again_continues_the_run(h):
    """A deploy script re-issues the same `run` line: it resumes, whether it
    repeats the inputs (in any key order) or leaves them out."""
    from engine_harness import BILLING_FILE

    assert h.run("r1", kill="start:charge", invoices=3).killed
    same = json.dumps({"invoices": 3, "ledger": str(h.ledger)})  # harness wrote ledger first
    h.clear_trace()
    p = h.cli(
        "run", f"{BILLING_FILE}:wf", "--run-id", "r1", "--input", same, env={"PHASEGATE_TEST_KILL_AT": "start:report"}
    )
    assert p.killed, p
    assert h.trace() == ["start:charge", "start:report"]
    h.clear_trace()
    p = h.cli("run", f"{BILLING_FILE}:wf", "--run-id", "r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:report"]
    assert len(h.charges()) == 3


@pytest.mark.parametrize("first_idempotent", ["0", "1"])
def test_a_phase_that_catches_every_exception_cannot_swallow_an_effect_in_doubt(h, first_idempotent):
    """Found by this test: the engine's stop was an Exception, so a phase's own
    `except Exception` could swallow it and complete with an effect in doubt
    (reachable when the effect was first declared idempotent, then not)."""
    from engine_harness import HERE_WORKFLOWS

    target = f"{HERE_WORKFLOWS / 'swallow.py'}:wf"
    env = {"PHASEGATE_TEST_KILL_AT": "after:charge", "SWALLOW_IDEMPOTENT": first_idempotent}
    p = h.cli("run", target, "--run-id", "s1", "--input", h.inputs(), env=env)
    assert p.killed
    p = h.resume("s1", env={"SWALLOW_IDEMPOTENT": "0"})
    assert p.returncode == 3 and "in_doubt_effect" in p.stdout, p
    st = h.status("s1")
    assert st["status"] == "blocked" and [ph["state"] for ph in st["phases"]] == ["partial"]
    assert len(h.charges()) == 1


def test_a_phase_that_catches_every_exception_cannot_swallow_a_damaged_record(h):
    from engine_harness import HERE_WORKFLOWS

    target = f"{HERE_WORKFLOWS / 'swallow.py'}:wf"
    # Completions committed before ctx.effect returns: the kill right after
    # it then finds the record done (by default it could still be waiting).
    env = {"PHASEGATE_TEST_KILL_AT": "after:effect", "PHASEGATE_EFFECT_FLUSH_MS": "0"}
    p = h.cli("run", target, "--run-id", "s1", "--input", h.inputs(), env=env)
    assert p.killed
    h.sql("UPDATE phasegate_effects SET result_json='{\"ok\":false}' WHERE run_id='s1'")
    p = h.resume("s1")
    assert p.returncode == 3 and "integrity" in p.stdout, p
    assert h.status("s1")["status"] == "blocked"
    assert len(h.charges()) == 1
