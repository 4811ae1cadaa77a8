"""An effect's completion commits with the run's next write, or on a short
timer (engine/run/completions.py): one fsync per effect. These kill the run at the
edges of that wait and check what the README promises: a completion not yet
committed leaves the effect in doubt, exactly like a kill during its call;
never a charge twice; anything written after an effect returned carries its
completion; and with nothing else to write, the timer commits it."""

from __future__ import annotations

import json

import pytest
from engine_harness import HERE_WORKFLOWS, spawn

from tests.support.waiting import until

TARGET = f"{HERE_WORKFLOWS / 'deferred.py'}:wf"
#: A wait no test reaches: the timer never commits, only the run's own writes do.
NEVER = {"PHASEGATE_EFFECT_FLUSH_MS": "600000"}


def _effects(h, run_id="d1"):
    return {e["name"]: e["state"] for e in h.status(run_id)["effects"]}


def test_the_next_effects_intent_carries_the_last_completion(h):
    p = h.run("d1", target=TARGET, kill="after:1", env=NEVER)
    assert p.killed
    # Killed right after charge1 returned, with nothing written since: in doubt.
    assert _effects(h) == {"charge1": "in_doubt"}
    assert h.resume("d1", env=NEVER).returncode == 3
    p = h.decide("d1", "confirm_effect", "--effect", "d1/pay/charge1", "--result", '{"id": "ch-charge1"}')
    assert p.returncode == 0, p

    p = h.resume("d1", kill="after:2", env=NEVER)
    assert p.killed
    # charge2's intent committed charge1's completion... and nothing since.
    assert _effects(h) == {"charge1": "done", "charge2": "in_doubt"}
    assert h.charge_keys() == ["d1/pay/charge1", "d1/pay/charge2"]


def test_a_durable_step_carries_the_completions_before_it(h):
    p = h.run("d1", target=TARGET, kill="after:step", env=NEVER)
    assert p.killed
    assert _effects(h) == {"charge1": "done", "charge2": "done"}
    p = h.resume("d1", env=NEVER)
    assert p.returncode == 0, p
    assert h.charge_keys() == ["d1/pay/charge1", "d1/pay/charge2", "d1/pay/charge3"]
    st = h.status("d1")
    assert st["status"] == "completed" and set(_effects(h).values()) == {"done"}


def test_a_checkpoint_carries_the_phases_last_completion(h):
    p = h.run("d1", target=TARGET, env=NEVER)
    assert p.returncode == 0, p
    assert set(_effects(h).values()) == {"done"}
    assert h.cli("verify").returncode == 0


def test_with_nothing_else_to_write_the_timer_commits_the_completion(h, tmp_path):
    wait = tmp_path / "waiting"
    env = {**h.env, "PHASEGATE_EFFECT_FLUSH_MS": "50", "DEFERRED_WAIT": str(wait)}
    child = spawn(["run", TARGET, "--run-id", "d1", "--input", h.inputs(), "--db", h.target], env=env)
    try:

        def charge3_done() -> bool:
            if not wait.exists():
                return False
            p = h.cli("status", "d1", "--json")
            states = {e["name"]: e["state"] for e in json.loads(p.stdout)["effects"]} if p.returncode == 0 else {}
            return states.get("charge3") == "done"

        until(charge3_done, "the flush timer to commit charge3's completion")
    finally:
        child.kill()
    # The phase never returned; its redo finds every charge done and calls none again.
    p = h.resume("d1")
    assert p.returncode == 0, p
    assert h.charge_keys() == ["d1/pay/charge1", "d1/pay/charge2", "d1/pay/charge3"]


@pytest.mark.parametrize("value", ["-1", "nan", "abc"])
def test_a_bad_flush_setting_is_refused_with_one_line(h, value):
    p = h.run("d1", target=TARGET, env={"PHASEGATE_EFFECT_FLUSH_MS": value})
    assert p.returncode == 2 and "PHASEGATE_EFFECT_FLUSH_MS" in p.stderr and "Traceback" not in p.stderr, p
    assert h.charges() == []
