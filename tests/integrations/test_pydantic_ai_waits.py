"""What parks a pydantic-ai agent besides an approval: a model API's 429
with a `Retry-After` (`RetryLater` on the model's step, the attempt counted),
and what importing the adapter without pydantic-ai says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integrations.pai_support import WAITING, AgentRun
from tests.support.cli import ROOT, child_env


def test_a_429_with_retry_after_parks_the_run_on_the_model_step(tmp_path: Path) -> None:
    run = AgentRun(tmp_path, "limited")
    res = run.start()
    assert res.rc == WAITING, res.stdout + res.stderr
    waiting = run.status()["waiting"]
    assert waiting["kind"] == "retry_later", waiting
    assert waiting["step"] == "limited:model:1", waiting
    assert waiting["attempt"] == 1, waiting
    assert "model API asked for a wait" in waiting["reason"], waiting
    assert run.calls() == ["model limited"]
    assert run.steps() == {}  # the failed request is not saved: its retry asks the model again


def test_importing_the_adapter_without_pydantic_ai_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['pydantic_ai'] = None\n"  # as if it were not installed
        "try:\n"
        "    import phasegate.integrations.pydantic_ai\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), cwd=ROOT)
    assert out.stdout.strip() == (
        "phasegate.integrations.pydantic_ai needs pydantic-ai: pip install 'phasegate[pydantic-ai]'"
    ), out.stdout + out.stderr


def test_a_resume_token_handed_on_is_a_question_and_its_answer_resumes_the_agent(tmp_path: Path) -> None:
    """pydantic-ai's token waits (`wait_for_external_event`, here the author's
    own `HandleDeferredToolCalls` with a token handler) wait as a phasegate
    question; the handler is not called again on the resume."""
    from pydantic_ai.capabilities import deferred_tool_handler

    if not hasattr(deferred_tool_handler, "wait_for_external_event"):
        pytest.skip("this pydantic-ai release's HandleDeferredToolCalls hands no resume token on")
    run = AgentRun(tmp_path, "handed")
    assert run.start().rc == WAITING
    question = run.status()["waiting"]["question"]
    assert question["name"] == "event:deferred_tool_calls"
    assert question["payload"] == {
        "agent": "handed",
        "event": "deferred_tool_calls",
        "token": "hand_over/event:deferred_tool_calls",
    }
    assert run.calls() == ["model handed 1", "handler hand_over/event:deferred_tool_calls"]
    run.answer("event:deferred_tool_calls", {"approvals": {"call-wipe": True}})
    res = run.resume()
    assert res.rc == 0, res.stdout + res.stderr
    assert run.calls() == [
        "model handed 1",
        "handler hand_over/event:deferred_tool_calls",
        "tool wipe cache",
        "model handed 2",
    ]
    assert run.steps()["handed:model:2"]["parts"][0]["content"] == "wiped cache"
    run.verify_clean()
