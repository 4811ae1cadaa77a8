"""A refund agent of the OpenAI Agents SDK, run durably by `PhasegateRunner`,
offline on the SDK's own scripted model (`agents.testing.ScriptedModel`).

The story: a triage agent hands off to a refunder, which looks up two orders
with two parallel calls of one tool, then refunds one (a tool that needs
approval and is a phasegate effect), then says what it did.

Every call that leaves the agent is written to a call log on disk (the run's
`log` input, one JSON line each), and the world's one side effect, the
refund, to a bank file (`bank`). `OA_KILL_AT=before:EVENT` or
`after:EVENT` makes this process SIGKILL itself once (a marker file
`OA_KILL_MARK` says it happened) just before an event is logged or just
after, before its result goes back to the SDK. Events are `model:LABEL`
(the model's turns, labelled by what the request holds, the same on every
replay) and `tool:CALL_ID`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ["OPENAI_API_KEY"] = ""

from agents import Agent, RunConfig, function_tool, set_tracing_disabled  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from phasegate import AsyncPhaseContext, Workflow  # noqa: E402
from phasegate.integrations.openai_agents import PhasegateRunner, effect_key  # noqa: E402

set_tracing_disabled(True)

wf = Workflow("test-openai-refunder")

_paths: dict[str, Path] = {}


def _log(event: dict[str, Any]) -> None:
    with _paths["log"].open("a") as f:
        f.write(json.dumps(event) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _kill_point(where: str, event: str) -> None:
    wanted = os.environ.get("OA_KILL_AT", "")
    mark = os.environ.get("OA_KILL_MARK", "")
    if wanted != f"{where}:{event}" or not mark or Path(mark).exists():
        return
    Path(mark).write_text(wanted)
    os.kill(os.getpid(), signal.SIGKILL)


def _event(kind: str, label: str, **fields: Any) -> None:
    """One call: a kill point before it is logged, the log line, a kill point after."""
    name = f"{kind}:{label}"
    _kill_point("before", name)
    _log({"event": name, **fields})
    _kill_point("after", name)


def _outputs(items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        return []
    return [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


def _respond(call: Any) -> Any:
    """The scripted model: what it answers follows from the request alone, so a replay's live
    request gets the same answer as the first run's."""
    outs = _outputs(call.input)
    by_id = {o.get("call_id"): o.get("output") for o in outs}
    if not call.handoffs and "h1" not in by_id:
        raise AssertionError("the refunder was reached without the triage's handoff")
    if "h1" not in by_id:
        label = "triage"
        answer: Any = [function_call("transfer_to_refunder", {}, call_id="h1")]
    elif "c1" not in by_id:
        label = "lookup"
        answer = [
            function_call("lookup", {"order": "A1"}, call_id="c1"),
            function_call("lookup", {"order": "A2"}, call_id="c2"),
        ]
    elif "c3" not in by_id:
        label = "refund"
        answer = [function_call("refund", {"order": "A1", "amount": 30}, call_id="c3")]
    else:
        label = "final"
        answer = [assistant_message(f"A1: {by_id['c1']} | A2: {by_id['c2']} | refund: {by_id['c3']}")]
    _event("model", label)
    return answer


model = ScriptedModel([ModelStep.respond(_respond) for _ in range(20)])


@function_tool
async def lookup(order: str) -> str:
    """Look an order up.

    Args:
        order: The order's id.
    """
    _event("tool", "c1" if order == "A1" else "c2", order=order)
    if order == "A1":
        await asyncio.sleep(0.05)  # sleep: the first call finishes last, so task order and finish order differ
    return f"order {order}: 30 EUR, paid"


@function_tool(needs_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order.

    Args:
        order: The order's id.
        amount: How much, in euros.
    """
    key = effect_key()
    _kill_point("before", "tool:c3")
    _log({"event": "tool:c3", "order": order, "amount": amount, "key": key})
    with _paths["bank"].open("a") as f:
        f.write(json.dumps({"key": key, "order": order, "amount": amount}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    _kill_point("after", "tool:c3")
    return f"refunded {amount} EUR on {order}"


refunder = Agent(name="refunder", instructions="Refund what is owed.", model=model, tools=[lookup, refund])
triage = Agent(name="triage", instructions="Send refunds to the refunder.", model=model, handoffs=[refunder])


@wf.phase()
async def agent_loop(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _paths["log"] = Path(ctx.inputs["log"])
    _paths["bank"] = Path(ctx.inputs["bank"])
    result = await PhasegateRunner.run(
        triage, ctx.inputs["task"], effects=("refund",), run_config=RunConfig(tracing_disabled=True)
    )
    return {"output": result.final_output, "agent": result.last_agent.name}
