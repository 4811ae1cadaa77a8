"""Each pydantic-ai operation as a durable step (or an effect) of the running phase."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic_ai.durable_exec import (
    CallableOperationBackend,
    DurableOperationId,
    JournalOperationNamer,
    ModelRequestId,
    RoleBasedOperationConfig,
    ToolsetCallToolId,
)
from pydantic_ai.exceptions import ModelAPIError

from ...errors import UsageError
from ...run.asynccontext import running_phase
from ...waits import RetryLater
from ._names import _names_of, step_name

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
