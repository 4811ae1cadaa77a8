"""The agents group 14 measures, one pair a framework: the same scripted agent
run durably on phasegate and plainly, each framework's own offline test model
(no network: what is measured is what phasegate adds, not a model's latency).

A `Framework` says how to run each of the two agents, durably (inside an
async phase) and plainly (outside one); `bench/frameworks.py` measures any of
them the same way. A framework whose package is not installed is None, with
the reason.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

TURNS = 20
"""The long agent's model requests: a tool call each turn but the last, which answers."""


@dataclass(frozen=True)
class Framework:
    """One framework's two scripted agents, each runnable durably and plainly."""

    name: str
    """How the figures name it."""
    model: str
    """Its scripted model, as the figures name it."""
    durable_one: Callable[[], Awaitable[str]]
    """An agent run of one model request, awaited inside an async phase (one durable step): its output."""
    plain_one: Callable[[], Awaitable[str]]
    """The same agent run, outside any phase."""
    durable_turns: Callable[[], Awaitable[str]]
    """A `TURNS`-turn agent run inside an async phase (`TURNS` model steps, `TURNS - 1` tool steps): "done"."""
    plain_turns: Callable[[], Awaitable[str]]
    """The same agent run, outside any phase."""


def pydantic_ai() -> Framework | str:
    """pydantic-ai with `PhasegateDurability` against plain pydantic-ai, on `FunctionModel`.

    Returns:
        The framework, or why it cannot be measured.
    """
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError:
        return "pydantic-ai is not installed (pip install '.[pydantic-ai]')"
    from phasegate.integrations.pydantic_ai import PhasegateDurability

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    def turns(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < TURNS - 1:
            return ModelResponse(parts=[ToolCallPart("note", {"i": turn}, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    # The capability runs the agent plainly outside a phase: one agent serves both sides.
    one = Agent(FunctionModel(answer), name="bench-one", capabilities=[PhasegateDurability()])
    many = Agent(FunctionModel(turns), name="bench-turns", capabilities=[PhasegateDurability()])

    @many.tool_plain
    async def note(i: int) -> int:
        return i

    async def run_one() -> str:
        return str((await one.run("go")).output)

    async def run_many() -> str:
        return str((await many.run("go")).output)

    return Framework(
        name="pydantic-ai",
        model="FunctionModel",
        durable_one=run_one,
        plain_one=run_one,
        durable_turns=run_many,
        plain_turns=run_many,
    )


def openai_agents() -> Framework | str:
    """The OpenAI Agents SDK's `PhasegateRunner` against its `Runner`, on `agents.testing.ScriptedModel`.

    Returns:
        The framework, or why it cannot be measured.
    """
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    try:
        from agents import Agent, RunConfig, Runner, function_tool
        from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
    except ImportError:
        return "the OpenAI Agents SDK is not installed (pip install '.[openai-agents]')"
    from phasegate.integrations.openai_agents import PhasegateRunner

    config = RunConfig(tracing_disabled=True)

    def turns(call: Any) -> Any:
        done = sum(1 for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output")
        if done < TURNS - 1:
            return [function_call("note", {"i": done}, call_id=f"c{done}")]
        return [assistant_message("done")]

    @function_tool
    async def note(i: int) -> int:
        """Note a number.

        Args:
            i: The number.
        """
        return i

    # The scripted model uses its steps up: a fresh agent a run, on both sides alike.
    def one() -> Any:
        return Agent(name="bench-one", model=ScriptedModel([[assistant_message("ok")]]))

    def many() -> Any:
        return Agent(
            name="bench-turns", model=ScriptedModel([ModelStep.respond(turns) for _ in range(TURNS)]), tools=[note]
        )

    async def durable(agent: Any) -> str:
        return str((await PhasegateRunner.run(agent, "go", run_config=config, max_turns=TURNS + 1)).final_output)

    async def plain(agent: Any) -> str:
        return str((await Runner.run(agent, "go", run_config=config, max_turns=TURNS + 1)).final_output)

    return Framework(
        name="openai-agents",
        model="ScriptedModel",
        durable_one=lambda: durable(one()),
        plain_one=lambda: plain(one()),
        durable_turns=lambda: durable(many()),
        plain_turns=lambda: plain(many()),
    )
