"""An agent whose tools are an MCP server's (`MCPToolset` over the mcp
package's own `MCPServer`, in the agent's process: no network), killed at
each call in turn and resumed: the tool list is a journaled step (a server
that gained a tool meanwhile is not seen by the replayed run), the two
parallel calls of one MCP tool keep their names (the model's call ids) and
results, nothing saved is asked again, and verify is clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integrations.pai_support import AgentRun

pytest.importorskip("fastmcp", reason="pydantic-ai's mcp extra (fastmcp's client) is not installed")

EXPECTED = "call-a=slow:4, call-b=fast:4"
#: The server gains a tool when this is set: what a replay must not see.
MORE = {"PAI_MCP_MORE": "1"}


def test_mcp_tool_calls_and_the_tool_list_are_durable_steps_under_kills(tmp_path: Path) -> None:
    clean = AgentRun(tmp_path / "clean", "mcp")
    clean.folder.mkdir()
    res = clean.start()
    assert res.rc == 0, res.stdout + res.stderr
    calls = clean.calls()
    assert calls[0] == "model mcp 1 tools=price" and calls[-1] == "model mcp 2 tools=price", calls
    assert sorted(calls[1:3]) == ["tool price fast", "tool price slow"]
    steps = clean.steps()
    assert sorted(steps) == sorted(
        ["mcp:tools:prices:1", "mcp:model:1", "mcp:tool:call-a", "mcp:tool:call-b", "mcp:model:2"]
    )
    assert clean.output() == {"output": EXPECTED}
    assert steps["mcp:tool:call-a"]["result"] == "slow:4" and steps["mcp:tool:call-b"]["result"] == "fast:4"
    # A run that starts after the server gained its tool is offered it (what the replays below are not).
    grown = AgentRun(tmp_path / "grown", "mcp")
    grown.folder.mkdir()
    args = ["run", grown.workflow_target, "--run-id", grown.run_id, "--input", json.dumps(grown.inputs())]
    assert grown.cli(*args, env=MORE).rc == 0
    assert grown.calls()[0] == "model mcp 1 tools=discount,price", grown.calls()
    for k in range(1, len(calls) + 1):
        run = AgentRun(tmp_path / f"kill-{k}", "mcp")
        run.folder.mkdir()
        where = f"killed at call {k} ({calls[k - 1]})"
        assert run.start(kill=k).killed, where
        res = run.resume(env=MORE)
        assert res.rc == 0, f"{where}: {res.stdout}{res.stderr}"
        made = run.calls()
        # The tool list was saved before the first model request: the resumed run's model
        # is offered what the first process saw, not the tool the server has gained since.
        assert all(c.endswith("tools=price") for c in made if c.startswith("model")), (where, made)
        # Each call made once, but the ones in flight at the kill (the two tool calls run
        # together: a kill in one may cut the other off too); the first model request, saved
        # before any tool ran, is asked again only when the kill was in it.
        for line in set(calls):
            assert 1 <= made.count(line) <= 2, (where, made)
        assert made.count("model mcp 1 tools=price") == (2 if k == 1 else 1), where
        final = run.steps()
        assert sorted(final) == sorted(steps), where
        assert final["mcp:tool:call-a"] == steps["mcp:tool:call-a"], where
        assert final["mcp:tool:call-b"] == steps["mcp:tool:call-b"], where
        assert final["mcp:model:2"]["parts"][0]["content"] == EXPECTED, where
        assert run.output() == {"output": EXPECTED}, where
        run.verify_clean()
