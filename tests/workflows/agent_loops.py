"""Agent workflows for the async and stop tests, written as an agent author
would: an async model client over real HTTP (asyncio streams, against the
stand-in server of tests/support/standin.py), a durable step per model
call, an effect per tool call.

  agent        an async loop of `turns` model calls, then an async notify
               effect (non-idempotent; its reconcile hook asks the server)
  misuse       sync phases that hand async code where it cannot run
               (inputs["mode"]: step-async, effect-async, effect-coroutine,
               phase-coroutine)
  long         a sync phase of `steps` durable steps of `pace` seconds each,
               one trace line per computed step
  long_async   the same as an async phase
  slow_effect  an async phase whose one effect takes `pace` seconds
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.request
from typing import Any
from urllib.parse import urlparse

from phasegate import AsyncPhaseContext, PhaseContext, Reconciled, Workflow


async def post(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """An async HTTP client in a dozen lines: what an SDK does under its hood."""
    u = urlparse(url)
    reader, writer = await asyncio.open_connection(u.hostname, u.port)
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    await writer.drain()
    raw = await reader.read()
    writer.close()
    _, _, payload = raw.partition(b"\r\n\r\n")
    return json.loads(payload)


def trace(path: str | None, line: str) -> None:
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())


# -- agent ------------------------------------------------------------------

agent = Workflow("test-agent")


async def ask_model(url: str, turn: int, history: list[str]) -> str:
    reply = await post(url, "/model", {"turn": turn, "context": len(history)})
    return str(reply["text"])


def _sent_hook(url: str) -> Any:
    def reconcile(key: str) -> Reconciled:
        with urllib.request.urlopen(f"{url}/sent?key={key}", timeout=5) as r:
            sent = json.loads(r.read())["sent"]
        return Reconciled.done({"ok": True, "key": key}) if sent else Reconciled.not_done()

    return reconcile


@agent.phase()
async def chat(ctx: AsyncPhaseContext) -> dict[str, Any]:
    url, turns = ctx.inputs["url"], int(ctx.inputs["turns"])
    history: list[str] = []
    for t in range(turns):
        history.append(await ctx.step(f"llm:{t}", ask_model, url, t, list(history), durable=True))

    async def notify(key: str) -> dict[str, Any]:
        return await post(url, "/send", {"key": key, "summary": history[-1]})

    sent = await ctx.effect("notify", notify, reconcile=_sent_hook(url))
    return {"turns": len(history), "last": history[-1], "sent": sent["key"]}


# -- misuse -----------------------------------------------------------------

misuse = Workflow("test-misuse")


async def _async_fn(*_: Any) -> str:
    return "never"


@misuse.phase()
def wrong(ctx: PhaseContext) -> Any:
    mode = ctx.inputs["mode"]
    if mode == "step-async":
        return ctx.step("call", _async_fn, durable=True)
    if mode == "effect-async":
        return ctx.effect("email", _async_fn)
    if mode == "effect-coroutine":
        return ctx.effect("email", lambda key: _async_fn(key))
    if mode == "phase-coroutine":
        return _async_fn()
    raise ValueError(mode)


# -- long -------------------------------------------------------------------

long = Workflow("test-long")


def _work(path: str | None, i: int, pace: float) -> int:
    time.sleep(pace)  # sleep: the agent's pace, so the test can act mid-run
    trace(path, f"step {i}")
    return i * i


@long.phase()
def work(ctx: PhaseContext) -> int:
    total = 0
    for i in range(int(ctx.inputs.get("steps", 30))):
        total += ctx.step(f"s:{i}", _work, ctx.inputs.get("trace"), i, float(ctx.inputs["pace"]), durable=True)
    return total


@long.phase(needs=["work"])
def after(ctx: PhaseContext, work: int) -> int:
    return work + 1


long_async = Workflow("test-long-async")


async def _awork(path: str | None, i: int, pace: float) -> int:
    trace(path, f"start {i}")
    await asyncio.sleep(pace)
    trace(path, f"step {i}")
    return i * i


@long_async.phase(name="work")
async def awork(ctx: AsyncPhaseContext) -> int:
    total = 0
    for i in range(int(ctx.inputs.get("steps", 30))):
        total += await ctx.step(f"s:{i}", _awork, ctx.inputs.get("trace"), i, float(ctx.inputs["pace"]), durable=True)
    return total


# -- slow effect --------------------------------------------------------------

slow_effect = Workflow("test-slow-effect")


@slow_effect.phase()
async def deliver(ctx: AsyncPhaseContext) -> Any:
    path, pace = ctx.inputs.get("trace"), float(ctx.inputs["pace"])

    async def send(key: str) -> dict[str, Any]:
        trace(path, "send begins")
        await asyncio.sleep(pace)
        trace(path, "send ends")
        return {"delivered": key}

    got = await ctx.effect("deliver", send)
    await ctx.step("after", lambda: trace(path, "after"))
    return got
