"""Group 14, agent frameworks (#37): an agent on phasegate against the same
agent run plainly, for each framework an adapter exists for (pydantic-ai's
`PhasegateDurability`, the OpenAI Agents SDK's `PhasegateRunner`), each on
its framework's own scripted model (bench/scripted_agents.py), measured the
same way:

- a durable model request against a plain one: an agent of one model
  request, run `n` times inside one phase (each request one durable step,
  committed) and `n` times outside any phase;
- a 20-turn agent (19 tool calls, one a turn, then its answer: 20 model
  requests and 19 tool steps), one run of a workflow against one plain run.

A framework not installed is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import time

from phasegate import AsyncPhaseContext, Engine, Workflow

from . import scripted_agents
from ._util import Figure, median, scratch
from .scripted_agents import TURNS, Framework

GROUP = "14 agent frameworks"
FRAMEWORKS = {"pydantic-ai": scripted_agents.pydantic_ai, "openai-agents": scripted_agents.openai_agents}
"""Each framework's name and how its agents are made (or why they cannot be)."""


def run(quick: bool, rounds: int) -> list[Figure]:
    out: list[Figure] = []
    for name, make in FRAMEWORKS.items():
        fw = make()
        if isinstance(fw, str):
            out += _skipped(name, fw)
        else:
            out += [_request(fw, 20 if quick else 100, rounds), _twenty_turns(fw, rounds)]
    return out


def skipped(why: str) -> list[Figure]:
    return [f for name in FRAMEWORKS for f in _skipped(name, why)]


def _skipped(name: str, why: str) -> list[Figure]:
    return [
        Figure(_request_name(name, "?"), None, "x", None, None, group=GROUP, skipped=why),
        Figure(_turns_name(name, "?"), None, "x", None, None, group=GROUP, skipped=why),
    ]


def _request_name(name: str, model: str) -> str:
    return f"{name} durable model request / plain ({model})"


def _turns_name(name: str, model: str) -> str:
    return f"{name} {TURNS}-turn agent, phasegate / plain ({model})"


def _request(fw: Framework, n: int, rounds: int) -> Figure:
    durable: list[float] = []
    plain: list[float] = []
    wf = Workflow(f"bench-{fw.name}-requests")

    @wf.phase()
    async def loop(ctx: AsyncPhaseContext) -> None:
        t0 = time.perf_counter()
        for _ in range(n):
            await fw.durable_one()
        durable.append((time.perf_counter() - t0) / n)

    async def outside() -> None:
        t0 = time.perf_counter()
        for _ in range(n):
            await fw.plain_one()
        plain.append((time.perf_counter() - t0) / n)

    with scratch() as d, Engine(d / "requests.db") as eng:
        for r in range(rounds):
            eng.run(wf, f"requests-{r}")
            asyncio.run(outside())
    ratios = [a / b for a, b in zip(durable, plain, strict=True)]
    return Figure(
        _request_name(fw.name, fw.model),
        median(ratios),
        "x",
        None,
        None,
        group=GROUP,
        baseline=f"a plain agent run of one scripted request: {median(plain) * 1e3:.2f} ms",
        detail=(
            f"durable: {median(durable) * 1e3:.2f} ms a request (one committed step each), "
            f"+{(median(durable) - median(plain)) * 1e3:.2f} ms; {n} agent runs of one request, per round"
        ),
        samples=ratios,
    )


def _twenty_turns(fw: Framework, rounds: int) -> Figure:
    durable: list[float] = []
    plain: list[float] = []
    wf = Workflow(f"bench-{fw.name}-turns")

    @wf.phase()
    async def loop(ctx: AsyncPhaseContext) -> str:
        return await fw.durable_turns()

    with scratch() as d, Engine(d / "turns.db") as eng:
        for r in range(rounds):
            t0 = time.perf_counter()
            out = eng.run(wf, f"turns-{r}")
            durable.append(time.perf_counter() - t0)
            assert str(out.status) == "completed" and out.result == "done", out
            t0 = time.perf_counter()
            said = asyncio.run(fw.plain_turns())
            plain.append(time.perf_counter() - t0)
            assert said == "done", said
    ratios = [a / b for a, b in zip(durable, plain, strict=True)]
    return Figure(
        _turns_name(fw.name, fw.model),
        median(ratios),
        "x",
        None,
        None,
        group=GROUP,
        baseline=f"plain {fw.name}: {median(plain) * 1e3:.1f} ms a run",
        detail=(
            f"phasegate: {median(durable) * 1e3:.1f} ms a run (the run's start and end included; "
            f"{TURNS} model requests and {TURNS - 1} tool calls, each a committed step)"
        ),
        samples=ratios,
    )
