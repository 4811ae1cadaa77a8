"""Workflows that wait, written as an agent author would (issue 27).

  refund   an agent that asks a person to approve a refund (a pydantic
           answer, the tool call as payload), then pays it as an effect;
           with inputs["timeout"], no answer escalates (`NoAnswer`)
  timer    a durable step, a durable timer of inputs["seconds"], a step
  limited  a step whose API answers "429, retry after inputs["after"] s" the
           first inputs["times"] calls (counted in a file): `RetryLater`
  ticking  a sync phase of inputs["steps"] durable steps of inputs["pace"] s;
           with inputs["hold"] (a path), step inputs["hold_at"] does not end
           until that file exists: the test decides when the run meets its
           next step, instead of racing the pace
  ticking_async  the same as an async phase

Each computed step appends a line to $PHASEGATE_TEST_TRACE ("name t=TIME"),
so a test sees what ran, and when, after kills and resumes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import AsyncPhaseContext, NoAnswer, PhaseContext, RetryLater, Workflow
from tests.support.waiting import until, until_async


def trace(line: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{line} t={time.time():.3f}\n")


def die_once(marker: str) -> None:
    """SIGKILL this process the first time it gets here (a marker file remembers)."""
    path = os.environ.get("PHASEGATE_TEST_TRACE", "/tmp/trace") + f".{marker}"
    if os.environ.get("WAITS_DIE") == marker and not Path(path).exists():
        Path(path).write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)


class Approval(BaseModel):
    approved: bool
    amount: int


refund = Workflow("refund")


@refund.phase()
def decide(ctx: PhaseContext) -> dict[str, Any]:
    claim = ctx.step("read_claim", lambda: (trace("read_claim"), {"order": ctx.inputs["order"], "amount": 200})[1],
                     durable=True)  # fmt: skip
    try:
        answer = ctx.ask(
            "approve_refund",
            f"Refund {claim['amount']} EUR for order {claim['order']}?",
            Approval,
            payload={"tool": "refund", "args": claim},
            timeout=ctx.inputs.get("timeout"),
        )
    except NoAnswer:
        trace("escalated")
        return {"escalated": True}
    trace(f"answered {type(answer).__name__} {answer.approved} {answer.amount}")
    die_once("after_answer")
    if not answer.approved:
        return {"refunded": 0}
    paid = ctx.effect("pay", lambda key: (trace(f"pay {key}"), {"paid": answer.amount})[1])
    return {"refunded": paid["paid"], "typed": type(answer).__name__}


timer = Workflow("timer")


@timer.phase()
def wait(ctx: PhaseContext) -> dict[str, Any]:
    ctx.step("before", lambda: trace("before"), durable=True)
    ctx.sleep("cool_down", ctx.inputs["seconds"])
    ctx.step("after", lambda: trace("after"), durable=True)
    return {"woke": time.time()}


limited = Workflow("limited")


def _call_api(counter: Path, times: int, after: float) -> dict[str, Any]:
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    trace(f"api call {n}")
    if n <= times:
        raise RetryLater(after, "429 from the model API")
    return {"calls": n}


@limited.phase()
def call(ctx: PhaseContext) -> dict[str, Any]:
    counter = Path(ctx.inputs["counter"])
    kw = {"retries": ctx.inputs["retries"]} if ctx.inputs.get("retries") is not None else {}
    return ctx.step("model", _call_api, counter, ctx.inputs["times"], ctx.inputs["after"], durable=True, **kw)


ticking = Workflow("ticking")


def _held(ctx: Any, i: int) -> bool:
    """Whether tick `i` is the one that waits for the test's hold file."""
    return bool(ctx.inputs.get("hold")) and i == int(ctx.inputs.get("hold_at", 1))


@ticking.phase()
def work(ctx: PhaseContext) -> dict[str, Any]:
    def tick(i: int) -> None:
        time.sleep(ctx.inputs["pace"])  # sleep: the pace, so a test can pause or cancel the run between two ticks
        if _held(ctx, i):
            until(Path(ctx.inputs["hold"]).exists, "the test's hold file", timeout=120)
        trace(f"tick:{i}")

    for i in range(ctx.inputs["steps"]):
        ctx.step(f"tick:{i}", tick, i, durable=True)
    return {"ticks": ctx.inputs["steps"]}


ticking_async = Workflow("ticking_async")


@ticking_async.phase()
async def awork(ctx: AsyncPhaseContext) -> dict[str, Any]:
    async def tick(i: int) -> None:
        await asyncio.sleep(ctx.inputs["pace"])
        if _held(ctx, i):
            await until_async(Path(ctx.inputs["hold"]).exists, "the test's hold file", timeout=120)
        trace(f"tick:{i}")

    for i in range(ctx.inputs["steps"]):
        await ctx.step(f"tick:{i}", tick, i, durable=True)
    return {"ticks": ctx.inputs["steps"]}


refund_async = Workflow("refund_async")


@refund_async.phase()
async def adecide(ctx: AsyncPhaseContext) -> dict[str, Any]:
    async def read_claim() -> dict[str, Any]:
        trace("read_claim")
        return {"order": ctx.inputs["order"], "amount": 200}

    claim = await ctx.step("read_claim", read_claim, durable=True)
    # Two questions at once: the run parks on the first it meets, and both are recorded.
    ok, note = await asyncio.gather(
        ctx.ask("approve_refund", f"Refund {claim['amount']} EUR?", Approval, payload=claim),
        ctx.ask("note", "Anything to tell the customer?", str),
    )
    await ctx.sleep("settle", 0.05)  # short: slept in the process
    trace(f"answered {type(ok).__name__} {ok.approved} {note}")
    return {"approved": ok.approved, "note": note}
