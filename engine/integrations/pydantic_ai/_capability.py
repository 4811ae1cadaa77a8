"""`PhasegateDurability`: the capability, its questions (approvals, deferred calls, token waits)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, JsonValue
from pydantic_ai import Agent
from pydantic_ai.durable_exec import (
    JSON_CODEC,
    BaseDurabilityCapability,
    DurabilityEngineSpec,
    DurableOperationBackend,
    ExternalEventError,
    ExternalEventWaiter,
    external_event_scope,
)
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import (
    AgentDepsT,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)

from ...errors import UsageError
from ...run.asynccontext import AsyncPhaseContext, running_phase
from ...run.parking import Park
from ...run.stopping import Interrupted
from ...waits import NoAnswer
from ._backend import _Backend
from ._names import _names_of


class _Waiter(ExternalEventWaiter):
    """pydantic-ai's token waits, as phasegate questions named `event:NAME`."""

    def __init__(self, ctx: AsyncPhaseContext, agent: str) -> None:
        self._ctx = ctx
        self._agent = agent

    async def wait(
        self,
        name: str,
        *,
        ask: Callable[[str], Awaitable[JsonValue]],
        timeout: timedelta | None,
    ) -> JsonValue:
        question = _question_name(f"event:{name}")
        token = f"{self._ctx.phase}/{question}"
        answered: JsonValue = await self._ctx.step(f"{self._agent}:event-ask:{name}", ask, token, durable=True)
        if answered is not None:
            return answered
        try:
            value: JsonValue = await self._ctx.ask(
                question,
                f"agent {self._agent} waits for {name}: answer with its JSON payload",
                payload={"agent": self._agent, "event": name, "token": token},
                timeout=None if timeout is None else timeout.total_seconds(),
            )
        except NoAnswer as exc:
            raise ExternalEventError(f"no answer to {question} within {timeout}") from exc
        return value


_SUSPENDING: tuple[type[BaseException], ...] = (Park, Interrupted)
"""What phasegate raises through the agent to stop its process for a while (a parked wait, a stop):
not the agent's failure, and a model's background job it was waiting on is left running for the resume."""

_KNOWS_SUSPENDING = "control_flow_error_types" in {f.name for f in dataclasses.fields(DurabilityEngineSpec)}
"""Whether this pydantic-ai lets an engine's own control-flow errors through (the floor does not)."""

_SPEC_LATER: dict[str, Any] = {"control_flow_error_types": _SUSPENDING} if _KNOWS_SUSPENDING else {}
"""The engine spec's fields that releases after the floor have."""


_BASE_SLEEPS = hasattr(BaseDurabilityCapability, "durable_sleep")
"""Whether the base routes the agent graph's waits to `durable_sleep` (the floor does not: this adapter does)."""


def _leave_the_job_running(error: BaseException) -> None:
    """On a release without `control_flow_error_types` (the floor), keep a suspending `error` from
    cancelling the background job the agent waits on: its one marker that leaves a job alone."""
    try:
        from pydantic_ai.models._continuation import mark_suspended_job_cancelled
    except ImportError:  # pragma: no cover - a release with neither
        return
    mark_suspended_job_cancelled(error)


def _question_name(name: str) -> str:
    # An answer names its question NAME or PHASE/NAME: no '/' in a name.
    return name.replace("/", "_")


class Approval(BaseModel):
    """An approval's answer in full: `{"approved": false, "reason": "..."}` (or just `true`/`false`)."""

    approved: bool
    """Whether the tool may be called."""
    reason: str | None = None
    """What the model is told when it is denied."""


def _approval(answer: bool | Approval) -> ToolApproved | ToolDenied:
    approved, reason = (answer, None) if isinstance(answer, bool) else (answer.approved, answer.reason)
    if approved:
        return ToolApproved()
    return ToolDenied(f"The operator denied the call: {reason}" if reason else "The operator denied the call.")


class PhasegateDurability(BaseDurabilityCapability[AgentDepsT]):
    """The capability that runs an agent durably inside a phasegate phase.

    Every model request, tool call and tool listing is a durable step of the
    running phase, named stably (the module's table); effect tools
    (`metadata={"phasegate": {"effect": True}}`) are effects; approvals,
    deferred calls and token waits are questions the run waits on. Outside a
    phase the agent runs as plain pydantic-ai.
    """

    engine_spec = DurabilityEngineSpec(
        engine_name="phasegate",
        durable_unit_noun="step",
        durable_container_noun="phase",
        # Steps are stored as JSON: the base reduces payloads to JSON first.
        codec=JSON_CODEC,
        wrapped_toolset_kinds=frozenset({"function", "mcp", "dynamic"}),
        # Steps run in the phase's own process and loop: an MCP session is held for the run.
        toolset_lifecycles={"function": "enter-always", "mcp": "enter-in-durable-unit", "dynamic": "enter-never"},
        journal_discovery=True,
        # Parallel tool calls are named by their call ids, not by the order they start.
        sequential_tools_in_durable_context=False,
        tool_config_key="phasegate",
        # A long durable sleep parks the run (and a stop interrupts it) by raising through the agent graph.
        **_SPEC_LATER,
    )

    def __init__(self, *, name: str | None = None) -> None:
        """Made once per agent, in its `capabilities=[...]`.

        Args:
            name: The name its steps begin with; the agent's `name` when not given (one of them is needed).
        """
        super().__init__(name=name)

    @property
    def in_durable_context(self) -> bool:
        """Whether an async phase is running in this task."""
        return running_phase() is not None

    def get_durable_operation_backend(self) -> DurableOperationBackend[Any]:
        """The backend that makes each operation a step of the running phase.

        Returns:
            The backend.

        Raises:
            UsageError: neither the capability nor the agent has a name.
        """
        if not self.name:
            raise UsageError("PhasegateDurability needs a name: give the agent one (Agent(..., name='refunder'))")
        return _Backend(self.name)

    def get_default_run_id(self) -> str | None:
        """The agent run's id inside a phase: the phasegate run, phase and the agent's ordinal there.

        Returns:
            An id a replay of the phase gives again, or None outside a phase.
        """
        ctx = running_phase()
        if ctx is None:
            return None
        return f"{ctx.run_id}:{ctx.phase}:{_names_of(ctx).ordinal(f'{self.name}:run')}"

    async def durable_sleep(self, seconds: float) -> None:
        """A wait the agent graph makes (between polls of a background job), as `ctx.sleep`.

        Args:
            seconds: How long.
        """
        ctx = running_phase()
        if ctx is None:
            await super().durable_sleep(seconds)
            return
        try:
            await ctx.sleep(_names_of(ctx).ordinal(f"{self.name}:sleep"), max(seconds, 0.0))
        except _SUSPENDING as exc:
            if not _KNOWS_SUSPENDING:
                _leave_the_job_running(exc)
            raise

    async def wrap_run(self, ctx: RunContext[AgentDepsT], *, handler: Any) -> Any:
        """Install the question-backed waiter for pydantic-ai's token waits, inside a phase (and the durable sleep,
        on a release whose base does not).

        Args:
            ctx: The agent run's context.
            handler: The run.

        Returns:
            The run's result.
        """
        phase = running_phase()
        if phase is None:
            return await handler()
        sleeps: AbstractContextManager[None] = nullcontext() if _BASE_SLEEPS else Agent.using_sleep(self.durable_sleep)
        with external_event_scope(_Waiter(phase, self.name)), sleeps:
            return await super().wrap_run(ctx, handler=handler)

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[AgentDepsT], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        """Approvals and deferred calls, asked of a person as the run's questions.

        The run waits (`status waiting`, exit 5) until `phasegate decide RUN
        answer --question approve:CALL_ID --value true` (or `false`, or
        `{"approved": false, "reason": "..."}`); a deferred call's question
        `result:CALL_ID` takes the tool's result as its answer.

        Args:
            ctx: The agent run's context.
            requests: The calls waiting.

        Returns:
            The answers, or None outside a phase.
        """
        phase = running_phase()
        if phase is None:
            return None
        out = DeferredToolResults()
        for call in requests.approvals:
            answer = await phase.ask(
                _question_name(f"approve:{call.tool_call_id}"),
                f"agent {self.name} asks to call {call.tool_name}: approve it? (true, false, "
                'or {"approved": false, "reason": "..."})',
                bool | Approval,
                payload=_payload(self.name, call, requests),
            )
            out.approvals[call.tool_call_id] = _approval(answer)
        for call in requests.calls:
            out.calls[call.tool_call_id] = await phase.ask(
                _question_name(f"result:{call.tool_call_id}"),
                f"agent {self.name} hands the call of {call.tool_name} to you: answer with its result",
                payload=_payload(self.name, call, requests),
            )
        return out


def _payload(agent: str, call: ToolCallPart, requests: DeferredToolRequests) -> dict[str, Any]:
    validated = getattr(requests, "validated_args", None) or {}  # newer releases say what the tool will receive
    args = validated.get(call.tool_call_id)
    return {
        "agent": agent,
        "tool": call.tool_name,
        "call_id": call.tool_call_id,
        "args": args if args is not None else call.args_as_dict(),
        "metadata": requests.metadata.get(call.tool_call_id, {}),
    }
