"""The real `mcp` client against `phasegate mcp`, for the engine's MCP tests:
in this process (`mcp.Client(server)` over the server `phasegate.mcp.server`
builds) or over stdio against `python -m phasegate mcp` as a subprocess."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Implementation

from phasegate import Engine
from phasegate.mcp.server import build
from tests.support.cli import child_env

T = TypeVar("T")


def session(
    target: str,
    work: Callable[[Client], Awaitable[T]],
    *,
    name: str = "claude-ai",
    stdio: bool = False,
    operator: str | None = None,
    env: dict[str, str] | None = None,
) -> T:
    """`work(client)` with a client named `name` connected to the store `target`.

    In process, the engine is closed again before this returns, so a forked
    child of the test may open the same SQLite file afterwards."""

    async def go() -> T:
        info = Implementation(name=name, version="1.0")
        if stdio:
            argv = ["-m", "phasegate", "mcp", "--db", target] + (["--operator", operator] if operator else [])
            params = StdioServerParameters(command=sys.executable, args=argv, env=child_env(env))
            async with Client(params, client_info=info) as c:
                return await work(c)
        with Engine(target, create=False) as eng:
            async with Client(build(eng, operator=operator), client_info=info) as c:
                return await work(c)

    return asyncio.run(go())


def call(target: str, tool: str, args: dict[str, Any] | None = None, **kw: Any) -> CallToolResult:
    """One tool call in a session of its own."""

    async def work(c: Client) -> CallToolResult:
        return await c.call_tool(tool, args or {})

    return session(target, work, **kw)


def ok(result: CallToolResult) -> Any:
    """The structured result of a call that must have succeeded."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # What a client reads: the structured content, as the JSON it came as.
    return json.loads(json.dumps(result.structured_content))


def error_line(result: CallToolResult) -> str:
    """The one line of a call that must have failed."""
    assert result.is_error, result.structured_content
    (content,) = result.content
    text = getattr(content, "text", "")
    assert text and "\n" not in text, text
    return text
