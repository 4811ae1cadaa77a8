"""pydantic-ai agents run through `phasegate run`, for tests/integrations.

Written as an agent author would: a pydantic-ai `Agent` with its tools and
one line added (`capabilities=[PhasegateDurability()]`), run inside an async
phase. The model is pydantic-ai's own offline `FunctionModel`, scripted: no
key, no network.

Inputs: `log` (the call log: one line a model call or a tool call, fsynced,
read by the tests), `ledger` (the refunds done: a JSON line per refund, keyed
by its idempotency key, as a payment API deduplicating by key would keep
them), `task`, and optionally `kill` (`N`: the process SIGKILLs itself as it
writes the call log's Nth line, counted over every process of the run).

  refunder   model: look up the order, then refund it (an effect that needs
             approval), then answer with what the tools said
  parallel   model: two calls of one tool in one response, then answer
  limited    model: a 429 with Retry-After
  streamer   `run_stream`: a streamed tool call, then a streamed answer
  handed     the author's HandleDeferredToolCalls hands a resume token on (a token wait)
  deferred   a tool raises CallDeferred: the run waits for its result
  sleeper    the model's job is a background one: the wait between polls is a durable sleep
  mcp        the tools are an MCP server's (the mcp package's MCPServer, in this process)
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phasegate import AsyncPhaseContext, Workflow
from phasegate.integrations.pydantic_ai import PhasegateDurability, effect_key

_INPUTS: dict[str, Any] = {}


def log(line: str) -> None:
    """Append one line to the call log (durable before the caller goes on),
    and SIGKILL this process when it is the line the test asked to die at."""
    path = Path(_INPUTS["log"])
    with path.open("a") as fh:
        fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    kill = _INPUTS.get("kill")
    if kill is not None and len(path.read_text().splitlines()) == int(kill):
        os.kill(os.getpid(), signal.SIGKILL)


def returns_of(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]


# -- refunder -------------------------------------------------------------------


def refunder_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model refunder {turn}")
    done = returns_of(messages)
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("lookup", {"order": "A-17"}, tool_call_id="call-lookup")])
    if turn == 2:
        return ModelResponse(
            parts=[ToolCallPart("refund", {"order": "A-17", "amount": 40}, tool_call_id="call-refund")]
        )
    return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in done))])


refunder_agent = Agent(FunctionModel(refunder_model), name="refunder", capabilities=[PhasegateDurability()])


@refunder_agent.tool_plain
def lookup(order: str) -> str:
    log(f"tool lookup {order}")
    return f"order {order}: 40 EUR, paid"


@refunder_agent.tool_plain(requires_approval=True, metadata={"phasegate": {"effect": True, "idempotent": True}})
def refund(order: str, amount: int) -> str:
    key = effect_key()
    log(f"tool refund {order} {key}")
    ledger = Path(_INPUTS["ledger"])
    done = {json.loads(line)["key"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    if key not in done:  # the payment API: one refund per idempotency key
        with ledger.open("a") as fh:
            fh.write(json.dumps({"key": key, "order": order, "amount": amount}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
    return f"refunded {amount} on {order}"


refunder = Workflow("pai-refunder")


@refunder.phase()
async def agent_loop(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await refunder_agent.run(ctx.inputs["task"])).output}


# -- parallel -------------------------------------------------------------------


def parallel_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model parallel {turn}")
    if turn == 1:
        return ModelResponse(
            parts=[
                ToolCallPart("price", {"item": "slow"}, tool_call_id="call-a"),
                ToolCallPart("price", {"item": "fast"}, tool_call_id="call-b"),
            ]
        )
    got = sorted(f"{p.tool_call_id}={p.content}" for p in returns_of(messages))
    return ModelResponse(parts=[TextPart(", ".join(got))])


parallel_agent = Agent(FunctionModel(parallel_model), name="pricer", capabilities=[PhasegateDurability()])


@parallel_agent.tool_plain
async def price(item: str) -> str:
    import asyncio

    log(f"tool price {item}")
    if item == "slow":
        await asyncio.sleep(0.05)  # the call started first finishes last
    return f"{item}:{len(item)}"


parallel = Workflow("pai-parallel")


@parallel.phase()
async def fan_out(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await parallel_agent.run(ctx.inputs["task"])).output}


# -- limited: the model API answers 429 with a Retry-After -------------------------


def limited_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    from pydantic_ai.exceptions import ModelHTTPError

    log("model limited")
    raise ModelHTTPError(429, "scripted", {"error": "rate limited"}, retry_after=3600)


limited_agent = Agent(FunctionModel(limited_model), name="limited", capabilities=[PhasegateDurability()])
limited = Workflow("pai-limited")


@limited.phase()
async def ask_once(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await limited_agent.run(ctx.inputs["task"])).output}


# -- streamer: the same agent, its model requests streamed --------------------------


async def streamer_model(messages: list[ModelMessage], info: AgentInfo) -> Any:
    from pydantic_ai.models.function import DeltaToolCall

    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model streamer {turn}")
    if turn == 1:
        yield {0: DeltaToolCall(name="lookup", json_args='{"order": "B-2"}', tool_call_id="call-stream")}
        return
    done = returns_of(messages)
    for word in ("looked", " up: ", str(done[0].content) if done else "?"):
        yield word


streamer_agent = Agent(
    FunctionModel(stream_function=streamer_model), name="streamer", capabilities=[PhasegateDurability()]
)
streamer_agent.tool_plain(lookup)
streamer = Workflow("pai-streamer")


@streamer.phase()
async def stream_loop(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    async with streamer_agent.run_stream(ctx.inputs["task"]) as result:
        output = await result.get_output()
    return {"output": output}


# -- handed: the author's own HandleDeferredToolCalls hands a resume token on ------------


def handed_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model handed {turn}")
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("wipe", {"what": "cache"}, tool_call_id="call-wipe")])
    return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returns_of(messages)))])


def hand_on(ctx: Any, requests: Any, token: str) -> None:
    """Hands the token to whoever answers (a chat message, an email): the run waits for it."""
    log(f"handler {token}")


def _handed_agent() -> Agent[None, str]:
    from pydantic_ai.capabilities import HandleDeferredToolCalls

    handed = Agent(
        FunctionModel(handed_model),
        name="handed",
        capabilities=[HandleDeferredToolCalls(handler=hand_on), PhasegateDurability()],
    )

    @handed.tool_plain(requires_approval=True)
    def wipe(what: str) -> str:
        log(f"tool wipe {what}")
        return f"wiped {what}"

    return handed


handed_agent = _handed_agent()
handed = Workflow("pai-handed")


@handed.phase()
async def hand_over(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await handed_agent.run(ctx.inputs["task"])).output}


# -- deferred: a tool hands its call to someone outside the agent (CallDeferred) -------------


def deferred_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model deferred {turn}")
    if turn == 1:
        return ModelResponse(parts=[ToolCallPart("ship", {"order": "A-17"}, tool_call_id="call-ship")])
    return ModelResponse(parts=[TextPart(" | ".join(str(p.content) for p in returns_of(messages)))])


deferred_agent = Agent(FunctionModel(deferred_model), name="deferred", capabilities=[PhasegateDurability()])


@deferred_agent.tool_plain
def ship(order: str) -> str:
    from pydantic_ai.exceptions import CallDeferred

    log(f"tool ship {order}")
    raise CallDeferred(metadata={"warehouse": "north"})


deferred = Workflow("pai-deferred")


@deferred.phase()
async def hand_off(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await deferred_agent.run(ctx.inputs["task"])).output}


# -- sleeper: a background model job, polled after a durable sleep ----------------------------


class BackgroundModel(FunctionModel):
    """A model whose first answer is a job still running on the provider's side
    (`state="suspended"`), polled after `seconds` (the run's `poll` input)."""

    def continuation_delay(self, response: ModelResponse) -> float | None:
        return float(_INPUTS.get("poll", 3600)) if response.state == "suspended" else None

    async def cancel_suspended_response(self, response: ModelResponse) -> None:
        log(f"cancel {response.provider_response_id}")


def sleeper_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelResponse) and last.state == "suspended":
        log(f"model sleeper poll {last.provider_response_id}")
        return ModelResponse(parts=[TextPart("the job is done")])
    log("model sleeper start")
    return ModelResponse(parts=[], state="suspended", provider_response_id="job-1")


sleeper_agent = Agent(BackgroundModel(sleeper_model), name="sleeper", capabilities=[PhasegateDurability()])
sleeper = Workflow("pai-sleeper")


@sleeper.phase()
async def wait_for_job(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    return {"output": (await sleeper_agent.run(ctx.inputs["task"])).output}


# -- mcp: the agent's tools are an MCP server's (the mcp package's, in this process) -------------


def mcp_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turn = sum(1 for m in messages if isinstance(m, ModelResponse)) + 1
    log(f"model mcp {turn} tools={','.join(sorted(t.name for t in info.function_tools))}")
    if turn == 1:
        return ModelResponse(
            parts=[
                ToolCallPart("price", {"item": "slow"}, tool_call_id="call-a"),
                ToolCallPart("price", {"item": "fast"}, tool_call_id="call-b"),
            ]
        )
    got = sorted(f"{p.tool_call_id}={p.content}" for p in returns_of(messages))
    return ModelResponse(parts=[TextPart(", ".join(got))])


def _mcp_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("prices")

    @server.tool()
    async def price(item: str) -> str:
        """The price of an item."""
        import asyncio

        log(f"tool price {item}")
        if item == "slow":
            await asyncio.sleep(0.05)  # sleep: the call started first finishes last
        return f"{item}:{len(item)}"

    return server


def _mcp_agent() -> Agent[None, str] | None:
    try:
        from pydantic_ai.mcp import MCPToolset
    except ImportError:  # pydantic-ai's mcp extra (fastmcp's client) is not installed
        return None
    return Agent(
        FunctionModel(mcp_model),
        name="mcp",
        toolsets=[MCPToolset(mcp_server, id="prices")],
        capabilities=[PhasegateDurability()],
    )


mcp_server = _mcp_server()
mcp_agent = _mcp_agent()
mcp = Workflow("pai-mcp")


@mcp.phase()
async def use_mcp(ctx: AsyncPhaseContext) -> dict[str, Any]:
    _INPUTS.clear()
    _INPUTS.update(ctx.inputs)
    assert mcp_agent is not None, "pydantic-ai's mcp extra (fastmcp's client) is not installed"
    if os.environ.get("PAI_MCP_MORE") and "discount" not in {t.name for t in await mcp_server.list_tools()}:
        # The server has changed since the run began: a tool more (its list on a replay is the journaled one).
        mcp_server.add_tool(lambda item: f"{item}: -10%", name="discount", description="A discount.")
    return {"output": (await mcp_agent.run(ctx.inputs["task"])).output}
