"""The names of a pydantic-ai agent's steps, pinned: stored runs depend on
them (a waiting run resumed by a newer phasegate finds its saved model
responses and tool results by name). Changing one strands in-flight runs:
such a change needs a migration, never an update of these pins."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integrations.pai_support import WAITING, AgentRun

pytest.importorskip("pydantic_ai", reason="the pydantic-ai extra is not installed")

from pydantic_ai.durable_exec import (  # noqa: E402
    CapabilityOperationId,
    EventStreamHandlerId,
    ModelRequestId,
    ToolsetCallToolId,
    ToolsetGetInstructionsId,
    ToolsetGetToolsId,
    ToolsetValidateToolArgumentsId,
)
from pydantic_ai.tools import RunContext  # noqa: E402
from pydantic_ai.usage import RunUsage  # noqa: E402

from phasegate.integrations.pydantic_ai._names import _Names, step_name  # noqa: E402


def test_the_refunder_agents_step_and_effect_names_are_pinned(tmp_path: Path) -> None:
    run = AgentRun(tmp_path, "refunder")
    assert run.start().rc == WAITING
    assert run.status()["waiting"]["question"]["name"] == "approve:call-refund"
    run.answer("approve:call-refund", True)
    assert run.resume().rc == 0
    assert list(run.steps()) == [
        "refunder:model:1",
        "refunder:tool:call-lookup",
        "refunder:model:2",
        "@ask:approve:call-refund",  # the question, as ctx.ask stores it
        "refunder:model:3",
    ]
    assert [(e["phase"], e["name"], e["key"]) for e in run.status()["effects"]] == [
        ("agent_loop", "refunder:tool:call-refund", "a1/agent_loop/refunder:tool:call-refund")
    ]


def _ctx(call_id: str | None) -> RunContext[None]:
    from pydantic_ai.models.test import TestModel

    return RunContext(deps=None, model=TestModel(), usage=RunUsage(), tool_call_id=call_id)


def test_every_kind_of_operation_has_its_pinned_name() -> None:
    names = _Names()
    ctx = _ctx("call-1")
    got = [
        step_name("a", ModelRequestId(model_name="m", streaming=False), (), names),
        step_name("a", ModelRequestId(model_name="m", streaming=True), (), names),
        step_name("a", ToolsetCallToolId("function", toolset_id="<agent>"), ("t", {}, ctx, None), names),
        step_name("a", ToolsetCallToolId("mcp", toolset_id="srv"), ("t", {}, _ctx("call-2"), None), names),
        # A model that gives a later call the same id: told apart, in the order the responses came.
        step_name("a", ToolsetCallToolId("function", toolset_id="<agent>"), ("t", {}, ctx, None), names),
        step_name("a", ToolsetValidateToolArgumentsId("mcp", toolset_id="srv"), ("t", {}, ctx, None), names),
        step_name("a", ToolsetGetToolsId("mcp", toolset_id="srv"), (), names),
        step_name("a", ToolsetGetToolsId("mcp", toolset_id="srv"), (), names),
        step_name("a", ToolsetGetInstructionsId(toolset_id="srv"), (), names),
        step_name("a", EventStreamHandlerId(), (), names),
        step_name("a", CapabilityOperationId("cap", operation="op"), (), names),
    ]
    assert got == [
        "a:model:1",
        "a:model:2",
        "a:tool:call-1",
        "a:tool:call-2",
        "a:tool:call-1#2",
        "a:validate:call-1",
        "a:tools:srv:1",
        "a:tools:srv:2",
        "a:instructions:srv:1",
        "a:event:1",
        "a:capability:cap.op:1",
    ]


def test_outside_a_phase_the_agent_runs_as_plain_pydantic_ai(tmp_path: Path) -> None:
    from tests.workflows import pai_agents

    pai_agents._INPUTS.update({"log": str(tmp_path / "calls.log")})
    result = asyncio.run(pai_agents.parallel_agent.run("price both"))
    assert result.output == "call-a=slow:4, call-b=fast:4"
    assert (tmp_path / "calls.log").read_text().count("model parallel") == 2


def test_a_token_count_has_its_pinned_name_where_the_release_has_one() -> None:
    import pydantic_ai.durable_exec as durable_exec

    if not hasattr(durable_exec, "ModelCountTokensId"):
        pytest.skip("this pydantic-ai release has no durable token counts")
    names = _Names()
    assert step_name("a", durable_exec.ModelCountTokensId(model_name="m"), (), names) == "a:count-tokens:1"
