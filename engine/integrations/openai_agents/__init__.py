"""The OpenAI Agents SDK on phasegate: `PhasegateRunner.run` instead of `Runner.run`.

    from phasegate.integrations.openai_agents import PhasegateRunner

    @wf.phase()
    async def agent_loop(ctx: AsyncPhaseContext) -> dict:
        result = await PhasegateRunner.run(agent, ctx.inputs["task"], effects=("refund",))
        return {"output": result.final_output}

Inside an async phase the agent runs as `Runner.run` runs it, with every
call that leaves the process made durable:

- each model request is a durable step, `openai-agents:model:N` (N counts
  the run's model responses from 1, across handoffs and approvals); a resume
  returns the saved response and never asks the model again;
- each function tool call is a durable step named by the model's call id,
  `openai-agents:tool:CALL_ID`, so parallel calls keep their names on a
  replay whatever order their tasks start in; the tools named in `effects`
  are also phasegate effects (`openai-agents:effect:CALL_ID`): the intent is
  committed before the tool runs, and the completion, in the step's own
  transaction, before its result goes back to the model; the tool reads its
  idempotency key with `effect_key()`;
- a tool with `needs_approval` parks the run on a question,
  `openai-agents:approve:CALL_ID`, whose prompt and payload name the tool,
  its arguments and the call id; `phasegate decide RUN answer --question Q
  --value true` approves the call in the SDK's `RunState`, `false` (or
  `{"approved": false, "reason": "..."}`) rejects it and the model is told.

A second `PhasegateRunner.run` in the same phase names its steps
`openai-agents.2:...`. Those names are what stored runs are found by: they
are pinned by tests/integrations/test_openai_agents_names.py.

Outside an async phase `PhasegateRunner.run` refuses (UsageError): what an
author wrote it for is durability, and a silent plain run (from a sync phase's
`asyncio.run`, say) would repeat every model request and effect on a resume.
Use `agents.Runner.run` there. Streaming is refused the same way.

The modules, one concept each: `_names` (the stored names), `_responses`
(a model response as a step stores it, and read back), `_effects` (the
effect key a tool reads), `_approvals` (a tool's approval as a question),
`_journal` (one run's durable models, tools, agents and handoffs),
`_runner` (`PhasegateRunner`), `_guard` (what a failed import says).
"""

from __future__ import annotations

from ._guard import missing

try:
    from ._approvals import Verdict
    from ._effects import effect_key
    from ._names import PREFIX
    from ._runner import PhasegateRunner
except ImportError as exc:  # exercised by tests in a fresh interpreter without the SDK, and with it shadowed
    if exc.name is None or exc.name.split(".")[0] not in ("agents", "openai"):
        raise
    raise ImportError(missing()) from None


__all__ = ["PREFIX", "PhasegateRunner", "Verdict", "effect_key"]
