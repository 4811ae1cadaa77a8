"""Workflows for the review of runs that wait (issue 27), written as an author would.

  two_asks      an async phase asking two questions at once (gather); each
                execution first spends $WAITS_SLOW seconds (not durable)
  slow_limited  a phase whose first step takes $WAITS_SLOW seconds (not
                durable), then a step whose API answers "429, retry after
                inputs["after"] s" the first inputs["times"] calls (`RetryLater`)

Each computed step appends a line to $PHASEGATE_TEST_TRACE ("name t=TIME").
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from phasegate import AsyncPhaseContext, PhaseContext, RetryLater, Workflow


def trace(line: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{line} t={time.time():.3f}\n")


def _call_api(counter: Path, times: int, after: float) -> dict[str, Any]:
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    trace(f"api call {n}")
    if n <= times:
        raise RetryLater(after, "429 from the model API")
    return {"calls": n}


def _slow() -> float:
    return float(os.environ.get("WAITS_SLOW") or 0)


two_asks = Workflow("two_asks")


@two_asks.phase()
async def approve(ctx: AsyncPhaseContext) -> dict[str, Any]:
    await asyncio.sleep(_slow())
    a, b = await asyncio.gather(ctx.ask("first", "First?", bool), ctx.ask("second", "Second?", bool))
    trace(f"answers {a} {b}")
    return {"first": a, "second": b}


slow_limited = Workflow("slow_limited")


@slow_limited.phase()
def call(ctx: PhaseContext) -> dict[str, Any]:
    ctx.step("prep", lambda: (time.sleep(_slow()), trace("prep")))  # sleep: a slow first step
    counter = Path(ctx.inputs["counter"])
    return ctx.step("model", _call_api, counter, ctx.inputs["times"], ctx.inputs["after"], durable=True, retries=3)


ask_then_use = Workflow("ask_then_use")


@ask_then_use.phase()
def ask(ctx: PhaseContext) -> dict[str, Any]:
    return {"go": ctx.ask("go", "Go on?", bool)}


@ask_then_use.phase(needs=["ask"])
def use(ctx: PhaseContext, ask: dict[str, Any]) -> dict[str, Any]:
    if os.environ.get("WAITS_FAIL"):
        raise RuntimeError("the tool refused")
    trace(f"used {ask['go']}")
    return {"used": ask["go"]}


slashed = Workflow("slashed")


@slashed.phase()
def check(ctx: PhaseContext) -> dict[str, Any]:
    return {"ok": ctx.ask(ctx.inputs["question"], "Go on?", bool)}
