"""A tool that hands its call to someone outside the agent (`CallDeferred`):
the run waits on `result:CALL_ID` with the call's payload, the answer is the
tool's result the model sees, and a kill at each call in turn repeats nothing
saved (the tool is not called again once its deferral was saved)."""

from __future__ import annotations

from pathlib import Path

from tests.integrations.pai_support import WAITING, AgentRun
from tests.integrations.test_pydantic_ai_kills import finish

QUESTION = "result:call-ship"
SHIPPED = "shipped from north, tracking T-9"


def test_a_deferred_call_waits_for_its_result_and_the_answer_reaches_the_model(tmp_path: Path) -> None:
    run = AgentRun(tmp_path, "deferred")
    assert run.start().rc == WAITING
    st = run.status()
    assert st["status"] == "waiting"
    question = st["waiting"]["question"]
    assert question["name"] == QUESTION
    assert "ship" in question["prompt"]
    assert question["payload"] == {
        "agent": "deferred",
        "tool": "ship",
        "call_id": "call-ship",
        "args": {"order": "A-17"},
        "metadata": {"warehouse": "north"},
    }
    assert run.calls() == ["model deferred 1", "tool ship A-17"]
    run.answer(QUESTION, SHIPPED)
    res = run.resume()
    assert res.rc == 0, res.stdout + res.stderr
    # The tool is not called again on the resume: its deferral was a saved step.
    assert run.calls() == ["model deferred 1", "tool ship A-17", "model deferred 2"]
    assert run.steps()["deferred:model:2"]["parts"][0]["content"] == SHIPPED
    assert run.output() == {"output": SHIPPED}
    run.verify_clean()


def test_killed_at_each_call_the_deferred_run_resumes_without_repeating_what_was_saved(tmp_path: Path) -> None:
    calls = ["model deferred 1", "tool ship A-17", "model deferred 2"]
    for k in range(1, len(calls) + 1):
        run = AgentRun(tmp_path / f"kill-{k}", "deferred")
        run.folder.mkdir()
        where = f"killed at call {k} ({calls[k - 1]})"
        res = finish(run, run.start(kill=k), SHIPPED)
        assert res.rc == 0, f"{where}: {res.stdout}{res.stderr}"
        # The call in flight when it died is made again; nothing saved before it is.
        assert run.calls() == calls[:k] + calls[k - 1 :], where
        assert run.steps()["deferred:model:2"]["parts"][0]["content"] == SHIPPED, where
        run.verify_clean()
