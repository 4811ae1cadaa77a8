"""The agent's durable sleeps: the wait between polls of a model's background
job (`state="suspended"`, the model's `continuation_delay`) is `ctx.sleep`
through the capability. A long one parks the run on a timer (no process held)
and leaves the job running; a short one is slept in the process, recorded,
and a kill around it repeats no saved model request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phasegate import _json
from tests.integrations.pai_support import WAITING, AgentRun

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai.durable_exec import DurabilityEngineSpec  # noqa: E402

#: Whether this pydantic-ai lets an engine's parking error through without cancelling the job
#: (`control_flow_error_types`): the floor (2.68) has no such field and cancels it on a park.
LEAVES_THE_JOB = "control_flow_error_types" in DurabilityEngineSpec.__dataclass_fields__

TIMER = "@sleep:sleeper:sleep:1"
CALLS = ["model sleeper start", "model sleeper poll job-1"]


def _due_now(run: AgentRun) -> None:
    """Move the parked timer's wake time to now, in its step and on its run's row, as the engine
    records them: the test decides when it is due instead of sleeping through it."""
    (saved,) = [v for k, v in run.steps().items() if k == TIMER]
    wake = saved["set_at"]
    step = _json.dumps({**saved, "until": wake})
    run.sql(
        "UPDATE phasegate_steps SET result_json = ?, result_hash = ? WHERE run_id = ? AND step_key = ?",
        (step, _json.sha256(step), run.run_id, TIMER),
    )
    run.sql(
        "UPDATE phasegate_runs SET wake_at = ?, waiting_json = json_set(waiting_json, '$.until', ?) WHERE run_id = ?",
        (wake, wake, run.run_id),
    )


def test_a_long_wait_for_a_background_job_parks_the_run_on_a_timer_and_leaves_the_job_running(
    tmp_path: Path,
) -> None:
    run = AgentRun(tmp_path, "sleeper")
    res = run.start()
    assert res.rc == WAITING, res.stdout + res.stderr
    waiting = run.status()["waiting"]
    assert waiting["kind"] == "timer", waiting
    assert waiting["name"] == "sleeper:sleep:1", waiting
    # The suspended response is saved; the job is not cancelled by the park.
    parked = CALLS[:1] if LEAVES_THE_JOB else [*CALLS[:1], "cancel job-1"]
    assert run.calls() == parked
    steps = run.steps()
    assert steps["sleeper:model:1"]["state"] == "suspended"
    assert TIMER in steps
    early = run.resume()  # not due yet: parks again, asking the model nothing
    assert early.rc == WAITING and run.calls() == parked, early
    _due_now(run)
    res = run.resume()
    assert res.rc == 0, res.stdout + res.stderr
    assert run.calls() == [*parked, CALLS[1]]
    assert run.output() == {"output": "the job is done"}
    run.verify_clean()


def test_a_short_wait_is_slept_in_the_process_and_a_kill_around_it_repeats_nothing_saved(tmp_path: Path) -> None:
    for k in (None, 1, 2):
        run = AgentRun(tmp_path / f"kill-{k}", "sleeper")
        run.folder.mkdir()
        inputs = {**run.inputs(k), "poll": 0.01}
        res = run.cli("run", run.workflow_target, "--run-id", run.run_id, "--input", json.dumps(inputs))
        if k is None:
            assert res.rc == 0, res.stdout + res.stderr
            assert run.calls() == CALLS
            assert TIMER in run.steps()
        else:
            assert res.killed, (k, res)
            res = run.resume()
            assert res.rc == 0, (k, res.stdout + res.stderr)
            assert run.calls() == CALLS[:k] + CALLS[k - 1 :], k
        assert run.output() == {"output": "the job is done"}, k
        run.verify_clean()
