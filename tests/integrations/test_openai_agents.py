"""An OpenAI Agents SDK agent run durably by `PhasegateRunner`, through
`phasegate run`, SIGKILLed at every model call and every tool call in turn,
then resumed (openai_refunder.py: a handoff, two parallel calls of one tool,
an effect tool that needs approval). The SDK's own scripted model plays the
model, offline: no key, no network.

From the call log on disk: no saved model response is asked for again and
no tool call whose result was saved is made again, the refund (an effect)
happens once, a kill right after an effect tool returned leaves nothing in
doubt, the approval parks the run with its payload and `decide answer`
(true, false, a verdict with a reason) resumes it; `phasegate verify` is
clean at the end."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import agents  # noqa: F401 - imported here so forked children start with the SDK loaded
import pytest

from tests.support import cli

HERE = Path(__file__).resolve().parent
TARGET = f"{HERE / 'openai_refunder.py'}:wf"
QUESTION = "openai-agents:approve:c3"
KEY = "r1/agent_loop/openai-agents:effect:c3"

EVENTS = ["model:triage", "model:lookup", "tool:c1", "tool:c2", "model:refund", "tool:c3", "model:final"]
DENIED_EVENTS = [e for e in EVENTS if e != "tool:c3"]
#: The durable step each call's result is saved under (the names the adapter gives).
STEP_OF = {
    "model:triage": "openai-agents:model:1",
    "model:lookup": "openai-agents:model:2",
    "tool:c1": "openai-agents:tool:c1",
    "tool:c2": "openai-agents:tool:c2",
    "model:refund": "openai-agents:model:3",
    "tool:c3": "openai-agents:tool:c3",
    "model:final": "openai-agents:model:4",
}

LOOKED_UP = "A1: order A1: 30 EUR, paid | A2: order A2: 30 EUR, paid"
APPROVED = {"output": f"{LOOKED_UP} | refund: refunded 30 EUR on A1", "agent": "refunder"}


def _denied(reason: str) -> dict[str, str]:
    return {"output": f"{LOOKED_UP} | refund: {reason}", "agent": "refunder"}


class Agentrun:
    """One run of the refunder in its own folder, driven through the command line."""

    def __init__(self, tmp_path: Path, mode: cli.Mode = "fork") -> None:
        self.db = tmp_path / "runs.db"
        self.log = tmp_path / "calls.jsonl"
        self.bank = tmp_path / "bank.jsonl"
        self.mark = tmp_path / "killed"
        self.mode: cli.Mode = mode
        self.at_kill: tuple[int, set[str]] = (0, set())
        """When a child was killed: how many calls the log held, and the steps saved."""
        self.env = {"OPENAI_API_KEY": "", "OPENAI_AGENTS_DISABLE_TRACING": "1"}
        if mode == "fork":
            cli.warm()

    def cli(self, *args: str, kill_at: str | None = None) -> cli.Result:
        """`phasegate ARGS` in a child: what runs the agent (and is killed)."""
        env = dict(self.env)
        if kill_at is not None:
            env.update(OA_KILL_AT=kill_at, OA_KILL_MARK=str(self.mark))
        return cli.run([*args, "--db", str(self.db)], env=env, mode=self.mode)

    def here(self, *args: str) -> cli.Result:
        """`phasegate ARGS` in this process: a read or a decision, which runs no agent."""
        return cli.inproc([*args, "--db", str(self.db)])

    def start(self, kill_at: str | None = None) -> cli.Result:
        inputs = {"task": "refund order A1", "log": str(self.log), "bank": str(self.bank)}
        return self.cli("run", TARGET, "--run-id", "r1", "--input", json.dumps(inputs), kill_at=kill_at)

    def status(self) -> Any:
        r = self.here("status", "r1", "--json")
        assert r.rc == 0, r
        return json.loads(r.stdout)

    def events(self) -> list[str]:
        if not self.log.exists():
            return []
        return [json.loads(line)["event"] for line in self.log.read_text().splitlines()]

    def refunds(self) -> list[dict[str, Any]]:
        if not self.bank.exists():
            return []
        return [json.loads(line) for line in self.bank.read_text().splitlines()]

    def steps(self) -> dict[str, Any]:
        with closing(sqlite3.connect(self.db)) as conn:
            rows = conn.execute(
                "SELECT step_key, result_json FROM phasegate_steps WHERE run_id='r1' AND NOT discarded"
            ).fetchall()
        return {k: json.loads(v) for k, v in rows}

    def result(self) -> Any:
        """What the phase returned, as its checkpoint holds it."""
        with closing(sqlite3.connect(self.db)) as conn:
            (text,) = conn.execute(
                "SELECT output_json FROM phasegate_checkpoints WHERE run_id='r1' AND phase='agent_loop' "
                "ORDER BY epoch DESC, seq DESC LIMIT 1"
            ).fetchone()
        return json.loads(text)

    def drive(self, answer: str, kill_at: str | None = None) -> list[str]:
        """Start the run and take it to its end as an operator would: resume it after a kill,
        answer the approval when it waits, confirm an effect a kill left in doubt. Returns what happened."""
        seen: list[str] = []
        r = self.start(kill_at)
        for _ in range(8):
            if r.killed:
                seen.append("killed")
                self.at_kill = (len(self.events()), set(self.steps()))
                assert self.status()["status"] in ("interrupted", "running"), self.status()["status"]
            elif r.rc == 5:
                seen.append("waiting")
                st = self.status()
                assert st["status"] == "waiting"
                q = st["waiting"]["question"]
                assert q["name"] == QUESTION
                assert q["payload"] == {
                    "tool": "refund",
                    "arguments": {"order": "A1", "amount": 30},
                    "call_id": "c3",
                    "agent": "refunder",
                }
                assert "'refund'" in q["prompt"] and "c3" in q["prompt"]
                d = self.here("decide", "r1", "answer", "--question", QUESTION, "--value", answer, "--reason", "t")
                assert d.rc == 0, d
            elif r.rc == 0:
                seen.append("completed")
                return seen
            else:
                st = self.status()
                doubts = [e for e in st["effects"] if e["state"] not in ("done",)]
                assert doubts, (r, st["status"], st["attention"])
                seen.append("in-doubt")
                # An operator checks the bank: confirmed when the refund went through, retried when not.
                if self.refunds():
                    assert [x["key"] for x in self.refunds()] == [KEY]
                    d = self.here(
                        "decide",
                        "r1",
                        "confirm_effect",
                        "--effect",
                        KEY,
                        "--result",
                        json.dumps("refunded 30 EUR on A1"),
                        "--reason",
                        "seen in the bank",
                    )
                else:
                    d = self.here("decide", "r1", "retry_effect", "--effect", KEY, "--reason", "not in the bank")
                assert d.rc == 0, d
            r = self.cli("resume", "r1", kill_at=kill_at)
        raise AssertionError(f"the run did not end: {seen}, last {r}")


def _check_end(run: Agentrun, expected: dict[str, str], events: list[str], kill_at: str | None) -> None:
    st = run.status()
    assert st["status"] == "completed", st["attention"]
    assert {k for k in run.steps() if ":model:" in k} == {f"openai-agents:model:{i}" for i in range(1, 5)}
    # Every call was made; after a kill, a call is made again only when its result was not
    # saved when the process died (a parallel sibling still running, a call cut off before
    # its step committed), and never twice in one process.
    log = run.events()
    assert set(log) == set(events), log
    n, saved = run.at_kill
    before, after = log[:n], log[n:]
    for e in set(log):
        assert before.count(e) <= 1 and after.count(e) <= 1, (e, log)
    again = [e for e in after if e in before]
    assert not [e for e in again if STEP_OF[e] in saved], (again, saved)
    assert "tool:c3" not in again, log  # the effect: confirmed or retried by an operator, never redone unasked
    if kill_at is None:
        assert log == events
    # The refund: once when approved (with its idempotency key), never when denied.
    refunds = run.refunds()
    if "tool:c3" in events:
        assert refunds == [{"key": KEY, "order": "A1", "amount": 30}]
        assert [e["state"] for e in st["effects"]] == ["done"]
    else:
        assert refunds == []
        assert st["effects"] == []
    # Parallel calls of one tool: named by call id, each with its own result.
    steps = run.steps()
    assert steps["openai-agents:tool:c1"] == "order A1: 30 EUR, paid"
    assert steps["openai-agents:tool:c2"] == "order A2: 30 EUR, paid"
    # What the model finally said, and the phase's result, are the uninterrupted run's.
    final = steps["openai-agents:model:4"]
    assert final["output"][0]["content"][0]["text"] == expected["output"]
    assert run.result() == expected
    v = run.here("verify")
    assert v.rc == 0, v
    assert "0 damaged" in v.stdout


def test_the_agent_runs_parks_for_approval_and_completes_through_the_command_line(tmp_path: Path) -> None:
    run = Agentrun(tmp_path, mode="exec")
    first = run.start()
    assert first.rc == 5, first
    assert "waiting for an answer to openai-agents:approve:c3" in first.stdout
    assert run.events() == ["model:triage", "model:lookup", "tool:c1", "tool:c2", "model:refund"]
    assert run.refunds() == []
    d = run.here("decide", "r1", "answer", "--question", QUESTION, "--value", "true", "--reason", "fine")
    assert d.rc == 0, d
    r = run.cli("resume", "r1")
    assert r.rc == 0, r
    assert r.stdout.strip() == "r1: completed"
    _check_end(run, APPROVED, EVENTS, None)


@pytest.mark.parametrize("kill_at", [f"{w}:{e}" for e in EVENTS for w in ("before", "after")])
def test_killed_at_each_call_and_resumed_approved(tmp_path: Path, kill_at: str) -> None:
    run = Agentrun(tmp_path)
    seen = run.drive("true", kill_at)
    assert seen.count("killed") == 1, seen
    assert seen.count("waiting") == 1, seen
    # Only a kill between the refund's intent and its completion leaves it in doubt (phasegate
    # cannot know whether the bank was called); a kill right after the tool returned to the
    # SDK, before the next model call (`before:model:final`), does not: it was committed first.
    assert ("in-doubt" in seen) == (kill_at in ("before:tool:c3", "after:tool:c3")), seen
    _check_end(run, APPROVED, EVENTS, kill_at)


@pytest.mark.parametrize("kill_at", [f"{w}:{e}" for e in DENIED_EVENTS for w in ("before", "after")])
def test_killed_at_each_call_and_resumed_denied(tmp_path: Path, kill_at: str) -> None:
    run = Agentrun(tmp_path)
    seen = run.drive(json.dumps({"approved": False, "reason": "over the limit"}), kill_at)
    assert seen.count("killed") == 1 and "in-doubt" not in seen, seen
    _check_end(run, _denied("over the limit"), DENIED_EVENTS, kill_at)


def test_a_plain_false_rejects_the_call_and_the_model_is_told(tmp_path: Path) -> None:
    run = Agentrun(tmp_path)
    seen = run.drive("false")
    assert seen == ["waiting", "completed"]
    assert run.refunds() == []
    told = run.steps()["openai-agents:model:4"]["output"][0]["content"][0]["text"]
    assert told.startswith(LOOKED_UP + " | refund: ") and "refunded" not in told


def test_an_answer_that_is_not_a_verdict_is_refused_and_the_run_keeps_waiting(tmp_path: Path) -> None:
    run = Agentrun(tmp_path)
    assert run.start().rc == 5
    d = run.here("decide", "r1", "answer", "--question", QUESTION, "--value", '"yes"', "--reason", "t")
    assert d.rc != 0 and "Traceback" not in d.stderr, d
    assert run.status()["status"] == "waiting"
