"""A tool call that needs approval, asked of a person as the run's question; the answer given to the SDK."""

from __future__ import annotations

import json
from typing import Any

from agents import ToolApprovalItem
from pydantic import BaseModel

from ...run.asynccontext import AsyncPhaseContext
from ._names import _part


class Verdict(BaseModel):
    """An answer to a tool's approval question that says why (`true`/`false` are answers too)."""

    approved: bool
    """Whether the tool call may run."""
    reason: str | None = None
    """What the model is told when the call is rejected."""


_Answer = bool | Verdict


async def approve(ctx: AsyncPhaseContext, prefix: str, state: Any, item: ToolApprovalItem) -> None:
    """Ask whether the call may run (the run waits until it is answered) and approve or reject it in `state`.

    Args:
        ctx: The running phase.
        prefix: The run's name prefix (`openai-agents`, `openai-agents.2`...).
        state: The SDK's `RunState` the interrupted run was saved as.
        item: The call waiting for approval.
    """
    raw = item.raw_item
    call_id = getattr(raw, "call_id", None) if not isinstance(raw, dict) else raw.get("call_id")
    tool = item.tool_name or "?"
    text = getattr(raw, "arguments", None) if not isinstance(raw, dict) else raw.get("arguments")
    try:
        arguments: Any = json.loads(text, strict=False) if isinstance(text, str) else text
    except ValueError:
        arguments = text
    agent = getattr(getattr(item, "agent", None), "name", None)
    payload = {"tool": tool, "arguments": arguments, "call_id": call_id, "agent": agent}
    # What the model wrote, shown as JSON (control characters escaped): stored and printed text.
    shown = json.dumps(arguments, separators=(",", ":"), default=str)
    part = _part(call_id)
    prompt = (
        f"Approve the call of tool {tool!r} with arguments {shown} (call {part}, agent {agent!r})? "
        "true runs it, false rejects it and the model is told"
    )
    answer = await ctx.ask(
        f"{prefix}:approve:{part}",
        prompt,
        _Answer,
        payload=json.loads(json.dumps(payload, default=str)),
    )
    if isinstance(answer, Verdict):
        approved, reason = answer.approved, answer.reason
    else:
        approved, reason = bool(answer), None
    if approved:
        state.approve(item)
    elif reason:
        state.reject(item, rejection_message=reason)
    else:
        state.reject(item)
