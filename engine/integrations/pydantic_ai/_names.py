"""The stored names of an agent's steps: stable, pinned by tests/integrations/test_pydantic_ai_names.py."""

from __future__ import annotations

import weakref

from pydantic_ai.durable_exec import (
    CapabilityOperationId,
    DurableOperationId,
    EventStreamHandlerId,
    ModelCancelSuspendedResponseId,
    ModelCompactMessagesId,
    ModelRequestId,
    ToolsetCallToolId,
    ToolsetGetInstructionsId,
    ToolsetGetToolsId,
    ToolsetValidateToolArgumentsId,
)
from pydantic_ai.tools import (
    RunContext,
)

from ...run.asynccontext import AsyncPhaseContext

_LATER_KINDS = {"ModelCountTokensId": "count-tokens"}
"""Operations of releases after the floor, by class name (the floor has no such class to match)."""


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
