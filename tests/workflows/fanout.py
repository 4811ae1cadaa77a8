"""A fan-out workflow for the concurrency kill tests: twenty items, each a
durable step and a non-idempotent effect, run concurrently four ways.

Inputs:
Two workflows, `gathered` (async) and `threaded` (sync), one per kind of phase.

  mode     "gather"      an async phase: asyncio.gather over per-item coroutines
           "threads"     a sync phase: a ThreadPoolExecutor of 4 over per-item functions
           "map"         an async phase: ctx.map for the steps, gather for the effects
           "map-threads" a sync phase: ctx.map for the steps, threads for the effects
  items    how many items (default 20)
  ledger   the gateway's ledger (JSON lines): every effect call that reaches it
           is a send, so a key in it twice was sent twice
  trace    a file with a line per durable step computed (fsynced)
  pace     seconds each step and each send takes (so kills land mid-flight)
  reconcile  "ledger": the effect's reconcile hook reads the ledger, so a
           resume settles an in-doubt effect itself; "": no hook (in doubt
           stops the run for an operator)

The output is a pure function of the inputs: a run killed and resumed any
number of times ends with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from phasegate import AsyncPhaseContext, PhaseContext, Reconciled, Workflow
from tests.workflows.torture import _append, read_lines

gathered = Workflow("test-fanout-async")
"""Its fan phase is `async def`: modes "gather" and "map"."""
threaded = Workflow("test-fanout-threads")
"""Its fan phase is a plain function on threads: modes "threads" and "map-threads"."""


def compute(inputs: dict[str, Any], i: int) -> dict[str, Any]:
    time.sleep(float(inputs.get("pace", 0.01)))  # sleep: the pace, which the kills land in
    _append(inputs["trace"], {"step": i})
    return {"i": i, "square": i * i}


async def compute_async(inputs: dict[str, Any], i: int) -> dict[str, Any]:
    await asyncio.sleep(float(inputs.get("pace", 0.01)))
    _append(inputs["trace"], {"step": i})
    return {"i": i, "square": i * i}


def _sender(inputs: dict[str, Any], i: int) -> Any:
    def send(key: str) -> dict[str, Any]:
        time.sleep(float(inputs.get("pace", 0.01)))  # sleep: the pace, which the kills land in
        _append(inputs["ledger"], {"key": key, "i": i})
        return {"sent": i}

    return send


def _async_sender(inputs: dict[str, Any], i: int) -> Any:
    async def send(key: str) -> dict[str, Any]:
        await asyncio.sleep(float(inputs.get("pace", 0.01)))
        _append(inputs["ledger"], {"key": key, "i": i})
        return {"sent": i}

    return send


def _hook(inputs: dict[str, Any]) -> Any:
    if inputs.get("reconcile") != "ledger":
        return None

    def reconcile(key: str) -> Reconciled:
        for rec in read_lines(inputs["ledger"]):
            if rec["key"] == key:
                return Reconciled.done({"sent": rec["i"]})
        return Reconciled.not_done()

    return reconcile


async def _fan_async(ctx: AsyncPhaseContext) -> list[Any]:
    inputs, n = ctx.inputs, int(ctx.inputs.get("items", 20))
    hook = _hook(inputs)
    if inputs["mode"] == "map":
        got = await ctx.map("fetch", lambda i: compute_async(inputs, i), range(n), durable=True, limit=8)
        sent = await asyncio.gather(
            *(ctx.effect(f"send:{i}", _async_sender(inputs, i), reconcile=hook) for i in range(n))
        )
        return [{**g, **s} for g, s in zip(got, sent, strict=True)]

    async def item(i: int) -> dict[str, Any]:
        got = await ctx.step(f"fetch:{i}", compute_async, inputs, i, durable=True)
        sent = await ctx.effect(f"send:{i}", _async_sender(inputs, i), reconcile=hook)
        return {**got, **sent}

    return list(await asyncio.gather(*(item(i) for i in range(n))))


def _fan_threads(ctx: PhaseContext) -> list[Any]:
    inputs, n = ctx.inputs, int(ctx.inputs.get("items", 20))
    hook = _hook(inputs)
    if inputs["mode"] == "map-threads":
        got = ctx.map("fetch", lambda i: compute(inputs, i), range(n), durable=True, limit=4)
        with ThreadPoolExecutor(4) as pool:
            sent = list(pool.map(lambda i: ctx.effect(f"send:{i}", _sender(inputs, i), reconcile=hook), range(n)))
        return [{**g, **s} for g, s in zip(got, sent, strict=True)]

    def item(i: int) -> dict[str, Any]:
        got = ctx.step(f"fetch:{i}", compute, inputs, i, durable=True)
        sent = ctx.effect(f"send:{i}", _sender(inputs, i), reconcile=hook)
        return {**got, **sent}

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(item, range(n)))


def _total(ctx: PhaseContext, fan: list[Any]) -> dict[str, Any]:
    return {"items": len(fan), "squares": sum(x["square"] for x in fan), "sent": sorted(x["sent"] for x in fan)}


@gathered.phase()
async def fan(ctx: AsyncPhaseContext) -> list[Any]:
    return await _fan_async(ctx)


@threaded.phase(name="fan")
def fan_threads(ctx: PhaseContext) -> list[Any]:
    return _fan_threads(ctx)


gathered.phase(name="total", needs=["fan"])(_total)
threaded.phase(name="total", needs=["fan"])(_total)

#: The workflow of each mode.
BY_MODE = {"gather": gathered, "map": gathered, "threads": threaded, "map-threads": threaded}
