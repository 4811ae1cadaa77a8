"""An operations agent that asks a person before a risky tool call, and
waits out a rate limit without holding a process (issue 27).

What it shows:
- `RetryLater`: the model API answers "429, retry after N s" (simulated by
  `model_api.json` in the run's folder); the planning call raises
  `RetryLater`, the run parks as `waiting` and a worker resumes it when it is
  due. The call is a durable step, so once it answers it is never paid for
  again;
- `ctx.ask`: the plan's tool call is risky (it deletes data), so the agent asks
  for approval, with the tool call as the payload. The run parks as `waiting`
  for an answer (no process held); `phasegate decide RUN answer` or the
  console's `i` answers it, checked against the `Approval` model;
- `ctx.sleep`: after the tool call, a durable cool-down before checking that
  the service came back (a kill never restarts it);
- an effect with an idempotency key for the tool call itself.

Inputs: `workdir` (made by `prepare`), `service`, `risky`, `settle` (seconds
of cool-down).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import PhaseContext, RetryLater, Workflow

from . import __version__

wf = Workflow("approvals")


class ToolCall(BaseModel):
    tool: str
    args: dict[str, Any]
    risk: str
    why: str


class Approval(BaseModel):
    approved: bool
    note: str = ""


def _workdir(inputs: dict[str, Any]) -> Path:
    return Path(inputs["workdir"])


def call_model(workdir: Path, service: str, risky: bool) -> dict[str, Any]:
    """The planning call to the model API. While `model_api.json` says the API
    is rate limited, it answers 429 with a Retry-After, as a real one does."""
    api = workdir / "model_api.json"
    state = json.loads(api.read_text())
    if state["limited"] > 0:
        state["limited"] -= 1
        api.write_text(json.dumps(state, indent=2) + "\n")
        raise RetryLater(float(state["retry_after"]), "429 from the model API")
    if risky:
        return {
            "tool": "drop_cache_tables",
            "args": {"service": service, "tables": ["sessions", "carts"]},
            "risk": "high",
            "why": f"{service} is out of memory; its cache tables hold 41 GB of stale sessions",
        }
    return {
        "tool": "restart",
        "args": {"service": service},
        "risk": "low",
        "why": f"{service} stopped answering its health check",
    }


def run_tool(workdir: Path, key: str, call: ToolCall) -> dict[str, Any]:
    """The tool call, against the simulated service: recorded once per key."""
    log = workdir / "tool_calls.jsonl"
    done = log.read_text().splitlines() if log.exists() else []
    if not any(json.loads(line)["key"] == key for line in done):
        with log.open("a") as fh:
            fh.write(json.dumps({"key": key, "tool": call.tool, "args": call.args}) + "\n")
    return {"tool": call.tool, "ok": True}


@wf.probe("code_version")
def code_version() -> str:
    return f"sample_runs {__version__}"


@wf.phase()
def plan(ctx: PhaseContext) -> ToolCall:
    """Ask the model what to do (a durable step: answered once, never paid again)."""
    reply = ctx.step(
        "model:plan", call_model, _workdir(ctx.inputs), ctx.inputs["service"], bool(ctx.inputs["risky"]), durable=True
    )
    return ToolCall(**reply)


@wf.phase(needs=["plan"])
def act(ctx: PhaseContext, plan: ToolCall) -> dict[str, Any]:
    """Run the planned tool call; a risky one only once a person approved it."""
    if plan.risk == "high":
        answer = ctx.ask(
            "approve_tool_call",
            f"Let the agent run {plan.tool} on {plan.args.get('service')}? {plan.why}",
            Approval,
            payload=plan.model_dump(),
        )
        if not answer.approved:
            return {"ran": False, "note": answer.note}
    result = ctx.effect(f"tool:{plan.tool}", lambda key: run_tool(_workdir(ctx.inputs), key, plan))
    # Give the service time to come back before checking on it (durable: a kill does not restart it).
    ctx.sleep("let_it_settle", float(ctx.inputs.get("settle", 0)))
    return {"ran": True, **result}


def prepare(
    workdir: str | Path,
    *,
    service: str = "checkout",
    risky: bool = True,
    limited: int = 0,
    retry_after: float = 60,
    settle: float = 0,
) -> dict[str, Any]:
    """Lay out an approvals working directory (the simulated model API's
    rate limit) and return a run's inputs.

    Args:
        workdir: The folder to lay out.
        service: The service the agent looks after.
        risky: The model plans a risky tool call (asked of a person) or a safe one.
        limited: How many calls the model API answers 429 first.
        retry_after: Its Retry-After, in seconds.
        settle: The cool-down after the tool call, in seconds.

    Returns:
        The run's inputs.
    """
    root = Path(workdir).absolute()
    root.mkdir(parents=True, exist_ok=True)
    (root / "model_api.json").write_text(json.dumps({"limited": limited, "retry_after": retry_after}, indent=2) + "\n")
    return {"workdir": str(root), "service": service, "risky": risky, "settle": settle}
