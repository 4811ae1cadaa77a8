"""A customer-support agent written with pydantic-ai, run durably by adding
one capability (`PhasegateDurability`); needs the pydantic-ai extra.

What it shows:
- the agent's model requests and tool calls are durable steps of its phase
  (`support:model:N`, `support:tool:CALL_ID`): a resumed agent asks its model
  nothing it already has an answer to;
- the refund tool needs approval (`requires_approval=True`): the run waits on
  the question `approve:CALL_ID`, whose payload names the tool, its arguments
  and the call id (`phasegate decide RUN answer --question ... --value true`,
  or the console's answer form);
- the refund is an effect (`metadata={"phasegate": {"effect": True, ...}}`):
  recorded before it runs and committed before the model sees its result; it
  hands the payment ledger its idempotency key (`effect_key()`).

The model is scripted (pydantic-ai's `FunctionModel`): no key, no network.

Inputs: `workdir` (made by `prepare`), `order`, `amount`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phasegate import AsyncPhaseContext, Workflow
from phasegate.integrations.pydantic_ai import PhasegateDurability, effect_key

wf = Workflow("refunds-agent")

_RUN: dict[str, Any] = {}
"""The running phase's inputs, for the tools (one run per process)."""


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: look the order up, then refund it, then say what happened."""
    turn = sum(isinstance(m, ModelResponse) for m in messages)
    order, amount = _RUN["order"], _RUN["amount"]
    if turn == 0:
        return ModelResponse(parts=[ToolCallPart("lookup_order", {"order": order}, tool_call_id=f"lookup-{order}")])
    if turn == 1:
        return ModelResponse(
            parts=[ToolCallPart("refund", {"order": order, "amount": amount}, tool_call_id=f"refund-{order}")]
        )
    said = [str(p.content) for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    return ModelResponse(parts=[TextPart("Done: " + "; ".join(said))])


agent = Agent(
    FunctionModel(scripted),
    name="support",
    instructions="You handle refund requests: check the order, then refund it.",
    capabilities=[PhasegateDurability()],
)


@agent.tool_plain
def lookup_order(order: str) -> str:
    """The order as the shop's database has it."""
    orders = json.loads((Path(_RUN["workdir"]) / "orders.json").read_text())
    got = orders.get(order)
    return f"order {order}: {got['amount']} EUR, {got['state']}" if got else f"order {order}: not found"


@agent.tool_plain(requires_approval=True, metadata={"phasegate": {"effect": True, "idempotent": True}})
def refund(order: str, amount: int) -> str:
    """Refund through the payment ledger, which deduplicates by the effect's key."""
    key = effect_key()
    ledger = Path(_RUN["workdir"]) / "refunds.jsonl"
    done = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key not in done:
        with ledger.open("a") as fh:
            fh.write(json.dumps({"key": key, "order": order, "amount": amount}) + "\n")
    return f"refunded {amount} EUR on {order}"


@wf.phase()
async def handle_request(ctx: AsyncPhaseContext) -> dict[str, Any]:
    """The agent's whole loop, one phase."""
    _RUN.clear()
    _RUN.update(ctx.inputs)
    result = await agent.run(f"Please refund order {ctx.inputs['order']}.")
    return {"output": result.output}


def prepare(workdir: str | Path, *, order: str = "A-1042", amount: int = 89) -> dict[str, Any]:
    """Lay out a working directory (the shop's orders) and return a run's inputs.

    Args:
        workdir: The folder to lay out.
        order: The order the customer wants refunded.
        amount: Its amount, in EUR.

    Returns:
        The run's inputs.
    """
    root = Path(workdir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    orders = {order: {"amount": amount, "state": "delivered, returned unopened"}}
    (root / "orders.json").write_text(json.dumps(orders, indent=2) + "\n")
    return {"workdir": str(root), "order": order, "amount": amount}
