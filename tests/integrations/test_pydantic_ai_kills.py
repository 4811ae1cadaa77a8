"""A pydantic-ai agent on phasegate, killed with SIGKILL at each of its
model calls and tool calls in turn, then resumed through the command line.

The agent (tests/workflows/pai_agents.py, `refunder`) looks an order up,
asks to refund it (a tool that needs approval and is an idempotent effect),
then answers. Its scripted model and its tools write a call log on disk, and
the process kills itself as it writes the Nth line; what the resumed run did
is read back from the log, the refunds ledger, `status --json` and `verify`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integrations.pai_support import WAITING, AgentRun
from tests.support.cli import Result

APPROVED = True
DENIED = {"approved": False, "reason": "over the refund limit"}


def finish(run: AgentRun, first: Result, approval: Any, on_kill: Any = None) -> Result:
    """Take the run to its end: resume it after each kill, answer each approval."""
    res = first
    for _ in range(12):
        if res.killed:
            if on_kill is not None:
                on_kill(run)
            res = run.resume()
            continue
        if res.rc != WAITING:
            return res
        waiting = run.status()["waiting"]
        assert waiting["kind"] == "answer", waiting
        run.answer(waiting["question"]["name"], approval)
        res = run.resume()
    raise AssertionError(f"the run did not end: {res}")


def baseline(tmp_path: Path, approval: Any) -> tuple[list[str], Any]:
    run = AgentRun(tmp_path / "baseline", "refunder")
    run.folder.mkdir()
    res = finish(run, run.start(), approval)
    assert res.rc == 0, res.stdout + res.stderr
    return run.calls(), run.status()["outputs"]


def test_a_tool_that_needs_approval_parks_the_run_with_its_payload(tmp_path: Path) -> None:
    run = AgentRun(tmp_path, "refunder")
    res = run.start()
    assert res.rc == WAITING, res.stdout + res.stderr
    st = run.status()
    assert st["status"] == "waiting"
    question = st["waiting"]["question"]
    assert question["name"] == "approve:call-refund"
    assert "refund" in question["prompt"]
    assert question["payload"] == {
        "agent": "refunder",
        "tool": "refund",
        "call_id": "call-refund",
        "args": {"order": "A-17", "amount": 40},
        "metadata": {},
    }
    # Nothing refunded while it waits; the model asked once for each turn so far.
    assert run.refunds() == []
    assert run.calls() == ["model refunder 1", "tool lookup A-17", "model refunder 2"]
    # An answer that is not an approval is refused, and the store is left as it was.
    bad = run.cli(
        "decide", run.run_id, "answer", "--question", "approve:call-refund", "--value", '"maybe"', "--reason", "test"
    )
    assert bad.rc == 2, bad.stdout + bad.stderr
    assert run.status()["waiting"]["question"]["name"] == "approve:call-refund"


@pytest.mark.parametrize("approval", [APPROVED, DENIED, False], ids=["approved", "denied-with-reason", "denied"])
def test_approved_and_denied_answers_resume_the_agent(tmp_path: Path, approval: Any) -> None:
    run = AgentRun(tmp_path, "refunder")
    res = finish(run, run.start(), approval)
    assert res.rc == 0, res.stdout + res.stderr
    st = run.status()
    assert st["status"] == "completed"
    output = run.steps()
    final = output["refunder:model:3"]["parts"][0]["content"]
    if approval is APPROVED:
        assert final == "order A-17: 40 EUR, paid | refunded 40 on A-17"
        assert [r["order"] for r in run.refunds()] == ["A-17"]
        assert [e["state"] for e in st["effects"]] == ["done"]
    else:
        # The model is told why, in the tool's return; the tool never ran.
        assert final.startswith("order A-17: 40 EUR, paid | The operator denied the call")
        if approval is DENIED:
            assert final.endswith("over the refund limit")
        assert run.refunds() == []
        assert st["effects"] == []
        assert not any(c.startswith("tool refund") for c in run.calls())
    run.verify_clean()


@pytest.mark.parametrize("approval", [APPROVED, DENIED], ids=["approved", "denied"])
def test_killed_at_each_model_and_tool_call_the_resumed_agent_repeats_nothing_saved(
    tmp_path: Path, approval: Any
) -> None:
    calls, outputs = baseline(tmp_path, approval)
    assert calls[0] == "model refunder 1" and calls[-1] == "model refunder 3", calls
    for k in range(1, len(calls) + 1):
        run = AgentRun(tmp_path / f"kill-{k}", "refunder")
        run.folder.mkdir()
        seen: dict[str, Any] = {}

        def on_kill(r: AgentRun, k: int = k, seen: dict[str, Any] = seen) -> None:
            st = r.status()
            seen["effects"] = [e["state"] for e in st["effects"]]

        first = run.start(kill=k)
        res = finish(run, first, approval, on_kill)
        where = f"killed at call {k} ({calls[k - 1]})"
        assert res.rc == 0, f"{where}: {res.stdout}{res.stderr}"
        # The call in flight when it died is made again; nothing saved before it is.
        assert run.calls() == calls[:k] + calls[k - 1 :], where
        st = run.status()
        assert st["status"] == "completed", where
        assert st["outputs"] == outputs, where
        assert [e["state"] for e in st["effects"] if e["state"] != "done"] == [], where
        refunded = run.refunds()
        assert len(refunded) == (1 if approval is APPROVED else 0), (where, refunded)
        if approval is APPROVED and calls[k - 1] == "model refunder 3":
            # Killed as the model's next request began, right after the effect
            # tool returned: its completion was already committed.
            assert seen["effects"] == ["done"], where
        run.verify_clean()


def test_streamed_model_requests_are_durable_steps_under_kills(tmp_path: Path) -> None:
    clean = AgentRun(tmp_path / "clean", "streamer")
    clean.folder.mkdir()
    assert clean.start().rc == 0
    calls = clean.calls()
    assert calls == ["model streamer 1", "tool lookup B-2", "model streamer 2"]
    assert list(clean.steps()) == ["streamer:model:1", "streamer:tool:call-stream", "streamer:model:2"]
    outputs = clean.status()["outputs"]
    for k in range(1, len(calls) + 1):
        run = AgentRun(tmp_path / f"kill-{k}", "streamer")
        run.folder.mkdir()
        assert run.start(kill=k).killed, k
        res = run.resume()
        assert res.rc == 0, res.stdout + res.stderr
        assert run.calls() == calls[:k] + calls[k - 1 :], k
        assert run.status()["outputs"] == outputs, k
        assert run.steps()["streamer:model:2"]["parts"][0]["content"] == "looked up: order B-2: 40 EUR, paid"
