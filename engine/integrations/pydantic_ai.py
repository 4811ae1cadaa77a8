"""pydantic-ai agents, run durably inside a phasegate phase: `PhasegateDurability`.

An author adds one capability and keeps the rest of the agent:

    agent = Agent(model, name="refunder", capabilities=[PhasegateDurability()])

Inside an async phase (found by itself: `running_phase()`), the agent's
model requests, tool calls and tool discovery are durable steps of that
phase, named stably (stored runs depend on the names, pinned by
tests/integrations/test_pydantic_ai_names.py):

    AGENT:model:N              the Nth model request of the agent in the phase (plain or streamed)
    AGENT:tool:CALL_ID         a tool call, by the model's `tool_call_id`
    AGENT:validate:CALL_ID     the validation of its arguments (MCP and dynamic tools)
    AGENT:tools:TOOLSET:N      the Nth listing of a toolset's tools (MCP tool lists stay stable)
    AGENT:instructions:TOOLSET:N
    AGENT:OPERATION:N          the other operations (events, token counts, capability operations)

A tool whose metadata is `{"phasegate": {"effect": True}}` (optionally
`"idempotent": True`) is an effect: its intent is committed before it runs
and its completion is committed before its result goes back to the model, so
that a process killed as the model's next request starts leaves nothing in
doubt. The tool reads its idempotency key with `effect_key()`.

A tool that needs approval (`requires_approval=True`, `ApprovalRequired`)
asks a question `approve:CALL_ID`; a deferred call (`CallDeferred`) asks
`result:CALL_ID`, whose answer is the tool's result; pydantic-ai's own token
waits (`wait_for_external_event`) ask `event:NAME`. The run waits for the
answer (`phasegate decide RUN answer`) holding no process. The agent's
durable sleeps are `ctx.sleep`; a model API error that asks for a wait
(`Retry-After`) parks the run with `RetryLater` on the model's step.

Outside a phase the agent runs as plain pydantic-ai.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Any

try:
    from pydantic import BaseModel, JsonValue
    from pydantic_ai.durable_exec import (
        JSON_CODEC,
        BaseDurabilityCapability,
        CallableOperationBackend,
        CapabilityOperationId,
        DurabilityEngineSpec,
        DurableOperationBackend,
        DurableOperationId,
        EventStreamHandlerId,
        ExternalEventError,
        ExternalEventWaiter,
        JournalOperationNamer,
        ModelCancelSuspendedResponseId,
        ModelCompactMessagesId,
        ModelRequestId,
        RoleBasedOperationConfig,
        ToolsetCallToolId,
        ToolsetGetInstructionsId,
        ToolsetGetToolsId,
        ToolsetValidateToolArgumentsId,
        external_event_scope,
    )
    from pydantic_ai.exceptions import ModelAPIError
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.tools import (
        AgentDepsT,
        DeferredToolRequests,
        DeferredToolResults,
        RunContext,
        ToolApproved,
        ToolDenied,
    )
except ModuleNotFoundError as exc:
    if exc.name is None or exc.name.split(".")[0] != "pydantic_ai":
        raise
    raise ImportError(
        "phasegate.integrations.pydantic_ai needs pydantic-ai: pip install 'phasegate[pydantic-ai]'"
    ) from None
except ImportError as exc:  # an older pydantic-ai, without the durable_exec names this is built on
    raise ImportError(
        f"phasegate.integrations.pydantic_ai needs a newer pydantic-ai ({exc}): "
        "pip install --upgrade 'phasegate[pydantic-ai]'"
    ) from None

from ..errors import UsageError
from ..run.asynccontext import AsyncPhaseContext, running_phase
from ..waits import NoAnswer, RetryLater

__all__ = ["Approval", "PhasegateDurability", "effect_key"]

#: The longest wait a model API's `Retry-After` parks a run for (seconds).
MAX_RETRY_AFTER = 3600.0

_EFFECT_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("phasegate_pydantic_ai_effect", default=None)


def effect_key() -> str:
    """The idempotency key of the effect tool running now.

    Give it to the system the tool acts on (a payment API's idempotency key),
    so that an effect phasegate calls again after a crash (an idempotent one)
    is done once.

    Returns:
        The key phasegate recorded with the effect's intent.

    Raises:
        UsageError: called outside a tool marked `{"phasegate": {"effect": True}}`.
    """
    key = _EFFECT_KEY.get()
    if key is None:
        raise UsageError(
            "effect_key() is only known inside a tool marked metadata={'phasegate': {'effect': True}}, "
            "run by an agent with PhasegateDurability inside a phase"
        )
    return key


_LATER_KINDS = {"ModelCountTokensId": "count-tokens"}
"""Operations of releases after the floor, by class name (the floor has no such class to match)."""


def _retry_after(error: BaseException) -> float | None:
    """The wait a model API error in `error`'s chain asked for (`Retry-After`), at most `MAX_RETRY_AFTER`.

    pydantic-ai's `model_error_retry_after` where the release has it; the same walk otherwise.
    """
    try:
        from pydantic_ai.durable_exec import model_error_retry_after
    except ImportError:
        seen: set[int] = set()
        current: BaseException | None = error
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            wait = getattr(current, "retry_after", None) if isinstance(current, ModelAPIError) else None
            if isinstance(wait, int | float):
                return min(float(wait), MAX_RETRY_AFTER)
            current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        return None
    found: float | None = model_error_retry_after(error, maximum=MAX_RETRY_AFTER)
    return found


class _Names:
    """The step names one phase execution has given out: ordinals per kind, and
    tool-call names made unique (a model that reuses a call id in a later turn)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.used: set[str] = set()

    def ordinal(self, prefix: str) -> str:
        n = self.counts.get(prefix, 0) + 1
        self.counts[prefix] = n
        return f"{prefix}:{n}"

    def unique(self, name: str) -> str:
        out, n = name, 1
        while out in self.used:
            n += 1
            out = f"{name}#{n}"
        self.used.add(out)
        return out


_names: weakref.WeakKeyDictionary[AsyncPhaseContext, _Names] = weakref.WeakKeyDictionary()


def _names_of(ctx: AsyncPhaseContext) -> _Names:
    got = _names.get(ctx)
    if got is None:
        got = _names[ctx] = _Names()
    return got


def _call_id(cache_key: tuple[object, ...]) -> str | None:
    for part in cache_key:
        if isinstance(part, RunContext):
            return part.tool_call_id
    return None


def step_name(agent: str, operation_id: DurableOperationId, cache_key: tuple[object, ...], names: _Names) -> str:
    """The stored name of one durable operation of agent `agent` (see the module's table).

    Args:
        agent: The agent's name.
        operation_id: Which operation it is.
        cache_key: The operation's parameters as pydantic-ai projects them (a tool call's `RunContext` names its call).
        names: What the phase has named so far.

    Returns:
        The step's name in the phase.
    """
    match operation_id:
        case ModelRequestId():
            return names.ordinal(f"{agent}:model")
        case ToolsetCallToolId() | ToolsetValidateToolArgumentsId():
            kind = "tool" if isinstance(operation_id, ToolsetCallToolId) else "validate"
            call = _call_id(cache_key)
            if call is None:
                return names.ordinal(f"{agent}:{kind}")
            return names.unique(f"{agent}:{kind}:{call}")
        case ToolsetGetToolsId(toolset_id=toolset):
            return names.ordinal(f"{agent}:tools:{toolset}")
        case ToolsetGetInstructionsId(toolset_id=toolset):
            return names.ordinal(f"{agent}:instructions:{toolset}")
        case EventStreamHandlerId():
            return names.ordinal(f"{agent}:event")
        case ModelCompactMessagesId():
            return names.ordinal(f"{agent}:compact")
        case ModelCancelSuspendedResponseId():
            return names.ordinal(f"{agent}:cancel-response")
        case CapabilityOperationId(capability_id=capability, operation=operation):
            return names.ordinal(f"{agent}:capability:{capability}.{operation}")
        case _:  # the union grows in minor releases
            kind = type(operation_id).__name__
            return names.ordinal(f"{agent}:{_LATER_KINDS.get(kind, kind)}")


_TOOL_OPTIONS = frozenset({"effect", "idempotent"})


def _tool_config(operation_id: DurableOperationId, tool: object | None, tool_name: str) -> dict[str, Any]:
    """A tool's `metadata={"phasegate": {...}}`, checked: `effect` and `idempotent`, both true or false."""
    tool_def = getattr(tool, "tool_def", None)
    metadata = getattr(tool_def, "metadata", None) or {}
    given = metadata.get("phasegate") if isinstance(metadata, Mapping) else None
    if given is None:
        return {}
    if not isinstance(given, Mapping) or not set(given) <= _TOOL_OPTIONS:
        raise UsageError(
            f"tool {tool_name!r}: metadata['phasegate'] is a dict of {sorted(_TOOL_OPTIONS)}, not {given!r}"
        )
    for option, value in given.items():
        if not isinstance(value, bool):
            raise UsageError(f"tool {tool_name!r}: metadata['phasegate'][{option!r}] is true or false, not {value!r}")
    if given.get("idempotent") and not given.get("effect"):
        raise UsageError(f"tool {tool_name!r}: 'idempotent' is said of an effect; add 'effect': True")
    return dict(given)


class _Backend(CallableOperationBackend[dict[str, Any]]):
    """Each operation is one durable step (or effect) of the running phase."""

    def __init__(self, agent: str) -> None:
        empty: dict[str, Any] = {}
        super().__init__(
            namer=JournalOperationNamer(agent),
            config=RoleBasedOperationConfig(
                model=empty, event=empty, capability=empty, tool=empty, resolve_tool=_tool_config
            ),
        )
        self._agent = agent

    async def execute(
        self,
        *,
        operation_id: DurableOperationId,
        name: str,
        body: Callable[[], Awaitable[object]],
        cache_key: tuple[object, ...],
        config: dict[str, Any],
    ) -> object:
        """Run `body` as the running phase's durable step, or as its effect when the tool's config says so.

        Args:
            operation_id: Which operation it is.
            name: pydantic-ai's name for it (not stored: phasegate names its steps itself).
            body: The operation, returning a JSON-compatible payload.
            cache_key: Its parameters, as pydantic-ai projects them.
            config: The tool's `{"phasegate": {...}}` metadata, merged over none.

        Returns:
            The payload, from the store when a replay has it.
        """
        ctx = running_phase()
        if ctx is None:
            return await body()
        step = step_name(self._agent, operation_id, cache_key, _names_of(ctx))
        if isinstance(operation_id, ModelRequestId):

            async def model_request() -> object:
                try:
                    return await body()
                except Exception as exc:
                    wait = _retry_after(exc)
                    if wait is None:
                        raise
                    raise RetryLater(wait, f"the model API asked for a wait ({type(exc).__name__})") from exc

            # Only a rate limit is retried here (its attempts counted on this
            # step); pydantic-ai's own retry capabilities see every other error.
            return await ctx.step(
                step,
                model_request,
                durable=True,
                retries=RetryLater.DEFAULT_ATTEMPTS - 1,
                retry_on=RetryLater,
            )
        if isinstance(operation_id, ToolsetCallToolId) and isinstance(config, Mapping) and config.get("effect"):

            async def act(key: str) -> object:
                token = _EFFECT_KEY.set(key)
                try:
                    return await body()
                finally:
                    _EFFECT_KEY.reset(token)

            result = await ctx.effect(step, act, idempotent=bool(config.get("idempotent", False)))
            # Before the result goes back to the model: its next request starts at once.
            await ctx.commit()
            return result

        async def run() -> object:
            return await body()

        return await ctx.step(step, run, durable=True)


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
        await ctx.sleep(_names_of(ctx).ordinal(f"{self.name}:sleep"), max(seconds, 0.0))

    async def wrap_run(self, ctx: RunContext[AgentDepsT], *, handler: Any) -> Any:
        """Install the question-backed waiter for pydantic-ai's token waits, inside a phase.

        Args:
            ctx: The agent run's context.
            handler: The run.

        Returns:
            The run's result.
        """
        phase = running_phase()
        if phase is None:
            return await handler()
        with external_event_scope(_Waiter(phase, self.name)):
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
