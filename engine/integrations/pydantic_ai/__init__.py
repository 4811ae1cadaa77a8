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

try:
    from ._backend import effect_key
    from ._capability import Approval, PhasegateDurability
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


__all__ = ["Approval", "PhasegateDurability", "effect_key"]
