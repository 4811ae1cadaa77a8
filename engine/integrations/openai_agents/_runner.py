"""`PhasegateRunner`: `agents.Runner.run`, durable, awaited inside an async phase."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agents import Agent, FunctionTool, Handoff, Runner, RunResult

from ...errors import UsageError
from ...run.asynccontext import running_phase
from ._approvals import approve
from ._journal import STREAMING, Journal
from ._names import run_prefix

OUTSIDE = (
    "PhasegateRunner.run works inside an async phase of a phasegate run (an `async def` phase awaiting it); "
    "outside one, call agents.Runner.run"
)


def _reachable_tools(agent: Agent[Any], seen: set[int] | None = None) -> tuple[set[str], bool]:
    """The function tool names of the agent and every agent it can hand off to; False when some handoff is opaque."""
    seen = seen if seen is not None else set()
    if id(agent) in seen:
        return set(), True
    seen.add(id(agent))
    names = {t.name for t in agent.tools if isinstance(t, FunctionTool)}
    complete = True
    for h in agent.handoffs:
        target: Any = h
        if isinstance(h, Handoff):
            ref = getattr(h, "_agent_ref", None)
            target = ref() if callable(ref) else None
        if isinstance(target, Agent):
            more, whole = _reachable_tools(target, seen)
            names |= more
            complete = complete and whole
        else:
            complete = False
    return names, complete


class PhasegateRunner:
    """`agents.Runner`, durable: awaited inside an async phase (see the package's note)."""

    @classmethod
    async def run(
        cls,
        starting_agent: Agent[Any],
        input: Any,
        *,
        effects: Iterable[str] = (),
        **runner_kwargs: Any,
    ) -> RunResult:
        """Run the agent as `agents.Runner.run` does, its model requests and tool calls durable.

        Args:
            starting_agent: The agent to run (it is not changed: the run uses a wrapped copy).
            input: What `Runner.run` takes: a text, a list of input items.
            effects: Names of function tools that act on the world (a refund, an email): each call is a
                phasegate effect, done at most once, its key readable with `effect_key()`.
            **runner_kwargs: Passed to `Runner.run` (`context`, `max_turns`, `hooks`, `run_config`...).

        Returns:
            The `RunResult` of the run's last `Runner.run` (after every approval was answered).

        Raises:
            UsageError: called outside an async phase, `effects` names a tool no agent has, or an agent
                has MCP servers.
        """
        ctx = running_phase()
        if ctx is None:
            raise UsageError(OUTSIDE)
        wanted = frozenset(effects if not isinstance(effects, str) else (effects,))
        names, complete = _reachable_tools(starting_agent)
        unknown = sorted(wanted - names)
        if unknown and complete:
            raise UsageError(
                f"effects names tools no agent of the run has: {', '.join(unknown)} "
                f"(function tools: {', '.join(sorted(names)) or 'none'})"
            )
        journal = Journal(ctx, run_prefix(ctx), wanted)
        agent = journal.agent(starting_agent)
        runner_kwargs["run_config"] = journal.run_config(runner_kwargs.get("run_config"))
        result = await Runner.run(agent, input, **runner_kwargs)
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                await approve(ctx, journal.prefix, state, item)
            result = await Runner.run(agent, state, **runner_kwargs)
        return result

    @classmethod
    def run_streamed(cls, *args: Any, **kwargs: Any) -> Any:
        """Refused: streaming is not durable yet.

        Args:
            *args: What `Runner.run_streamed` takes.
            **kwargs: What `Runner.run_streamed` takes.

        Raises:
            UsageError: always, naming `PhasegateRunner.run` instead.
        """
        raise UsageError(STREAMING)

    @classmethod
    def run_sync(cls, *args: Any, **kwargs: Any) -> Any:
        """Refused: a durable run is awaited in an async phase.

        Args:
            *args: What `Runner.run_sync` takes.
            **kwargs: What `Runner.run_sync` takes.

        Raises:
            UsageError: always, naming `await PhasegateRunner.run` instead.
        """
        raise UsageError(
            "PhasegateRunner.run_sync is not durable: declare the phase `async def` and "
            "`await PhasegateRunner.run(...)`"
        )
