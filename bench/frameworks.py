"""Group 14, agent frameworks (#37): a pydantic-ai agent on phasegate
(`PhasegateDurability`) against the same agent as plain pydantic-ai, both on
pydantic-ai's scripted `FunctionModel` (no network: what is measured is what
phasegate adds, not a model's latency).

- a durable model request against a plain one: an agent of one model
  request, run `n` times inside one phase (each request one durable step,
  committed) and `n` times outside any phase;
- a 20-turn agent (19 tool calls, one a turn, then its answer: 20 model
  requests and 19 tool steps), one run of a workflow against one plain
  `agent.run`.

Skipped with the reason when the pydantic-ai extra is not installed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from phasegate import AsyncPhaseContext, Engine, Workflow

from ._util import Figure, median, scratch

GROUP = "14 agent frameworks"
TURNS = 20


def run(quick: bool, rounds: int) -> list[Figure]:
    try:
        import pydantic_ai  # noqa: F401
    except ImportError:
        return skipped("pydantic-ai is not installed (pip install '.[pydantic-ai]')")
    return [_request(20 if quick else 100, rounds), _twenty_turns(rounds)]


def skipped(why: str) -> list[Figure]:
    return [
        Figure(_REQUEST, None, "x", None, None, group=GROUP, skipped=why),
        Figure(_TWENTY, None, "x", None, None, group=GROUP, skipped=why),
    ]


_REQUEST = "pydantic-ai durable model request / plain (FunctionModel)"
_TWENTY = f"pydantic-ai {TURNS}-turn agent, phasegate / plain (FunctionModel)"


def _agents() -> tuple[Any, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from phasegate.integrations.pydantic_ai import PhasegateDurability

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    def turns(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn < TURNS - 1:
            return ModelResponse(parts=[ToolCallPart("note", {"i": turn}, tool_call_id=f"c{turn}")])
        return ModelResponse(parts=[TextPart("done")])

    one = Agent(FunctionModel(answer), name="bench-one", capabilities=[PhasegateDurability()])
    many = Agent(FunctionModel(turns), name="bench-turns", capabilities=[PhasegateDurability()])

    @many.tool_plain
    async def note(i: int) -> int:
        return i

    return one, many


def _request(n: int, rounds: int) -> Figure:
    one, _ = _agents()
    durable: list[float] = []
    plain: list[float] = []
    wf = Workflow("bench-pai-requests")

    @wf.phase()
    async def loop(ctx: AsyncPhaseContext) -> None:
        t0 = time.perf_counter()
        for _ in range(n):
            await one.run("go")
        durable.append((time.perf_counter() - t0) / n)

    async def outside() -> None:
        t0 = time.perf_counter()
        for _ in range(n):
            await one.run("go")
        plain.append((time.perf_counter() - t0) / n)

    with scratch() as d, Engine(d / "pai.db") as eng:
        for r in range(rounds):
            eng.run(wf, f"requests-{r}")
            asyncio.run(outside())
    ratios = [a / b for a, b in zip(durable, plain, strict=True)]
    return Figure(
        _REQUEST,
        median(ratios),
        "x",
        None,
        None,
        group=GROUP,
        baseline=f"a plain agent.run of one scripted request: {median(plain) * 1e3:.2f} ms",
        detail=(
            f"durable: {median(durable) * 1e3:.2f} ms a request (one committed step each), "
            f"+{(median(durable) - median(plain)) * 1e3:.2f} ms; {n} agent runs of one request, per round"
        ),
        samples=ratios,
    )


def _twenty_turns(rounds: int) -> Figure:
    _, many = _agents()
    durable: list[float] = []
    plain: list[float] = []
    wf = Workflow("bench-pai-turns")

    @wf.phase()
    async def loop(ctx: AsyncPhaseContext) -> str:
        return str((await many.run("go")).output)

    with scratch() as d, Engine(d / "turns.db") as eng:
        for r in range(rounds):
            t0 = time.perf_counter()
            out = eng.run(wf, f"turns-{r}")
            durable.append(time.perf_counter() - t0)
            assert str(out.status) == "completed", out
            t0 = time.perf_counter()
            asyncio.run(many.run("go"))
            plain.append(time.perf_counter() - t0)
    ratios = [a / b for a, b in zip(durable, plain, strict=True)]
    return Figure(
        _TWENTY,
        median(ratios),
        "x",
        None,
        None,
        group=GROUP,
        baseline=f"plain pydantic-ai: {median(plain) * 1e3:.1f} ms a run",
        detail=(
            f"phasegate: {median(durable) * 1e3:.1f} ms a run (the run's start and end included; "
            f"{TURNS} model requests and {TURNS - 1} tool calls, each a committed step)"
        ),
        samples=ratios,
    )
