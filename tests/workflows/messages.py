"""Workflows that receive messages (issue 42), written as an author would.

  payment   waits for a "go" message, then receives two "paid" messages
            (a pydantic model) in its next phase, and ships what it got
  timeout   receives "paid" with inputs["timeout"] seconds; none by then
            takes the `NoAnswer` path
  async_payment  `payment`'s second phase as an async phase

  PHASEGATE_TEST_KILL_AT   comma-separated points at which this process
                           SIGKILLs itself, the first time a test reaches each:
                           "after-step:PHASE/KEY" (a durable step committed,
                           a received message's included), "after-checkpoint:PHASE",
                           "in-phase:PHASE"
  PHASEGATE_TEST_STOP_AT   the same, but SIGSTOP: the test continues it
  PHASEGATE_TEST_POINTS    a file each point reached is appended to (the
                           test learns the points from an uninterrupted run)

Each phase start and each message received appends a line to
$PHASEGATE_TEST_TRACE, so a test sees what ran after kills and resumes.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from phasegate import AsyncPhaseContext, NoAnswer, PhaseContext, Workflow, _pause
from phasegate.observe import hooks


def trace(line: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")


class _Points(hooks.Observer):
    """Writes each point reached, and SIGKILLs this process at the named ones."""

    def at(self, label: str) -> None:
        points = os.environ.get("PHASEGATE_TEST_POINTS")
        if points:
            with open(points, "a") as fh:
                fh.write(label + "\n")
        if label in os.environ.get("PHASEGATE_TEST_STOP_AT", "").split(","):
            marker = Path(os.environ.get("PHASEGATE_TEST_TRACE", "/tmp/trace") + ".stopped-" + label.replace("/", "|"))
            if not marker.exists():
                marker.write_text("stopped")
                os.kill(os.getpid(), signal.SIGSTOP)  # the test sends SIGCONT
        if label in os.environ.get("PHASEGATE_TEST_KILL_AT", "").split(","):
            # Once a test: a marker file beside the trace remembers the kill,
            # so the resume that follows goes past the point.
            marker = Path(os.environ.get("PHASEGATE_TEST_TRACE", "/tmp/trace") + ".killed-" + label.replace("/", "|"))
            if not marker.exists():
                marker.write_text("killed")
                os.kill(os.getpid(), signal.SIGKILL)

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        self.at(f"after-step:{phase}/{key}")

    def checkpoint(self, run_id: str, workflow: str, phase: str, began: float) -> None:
        self.at(f"after-checkpoint:{phase}")


_points = _Points()
hooks.install(_points)
_pause.watch(lambda kind, name: _points.at(f"{kind}:{name}") if kind == "in-phase" else None)


class Paid(BaseModel):
    ref: str
    amount: int


payment = Workflow("payment")


@payment.phase()
def wait_go(ctx: PhaseContext) -> dict[str, Any]:
    trace("wait_go")
    go = ctx.recv("go")
    trace(f"go {go!r}")
    return {"go": go}


@payment.phase(needs=["wait_go"])
def pay(ctx: PhaseContext, wait_go: dict[str, Any]) -> dict[str, Any]:
    trace("pay")
    first = ctx.recv("paid", Paid)
    trace(f"paid {first.ref}")
    second = ctx.recv("paid", Paid)
    trace(f"paid {second.ref}")
    return {"refs": [first.ref, second.ref], "total": first.amount + second.amount}


@payment.phase(needs=["pay"])
def ship(ctx: PhaseContext, pay: dict[str, Any]) -> dict[str, Any]:
    trace("ship")
    return {"shipped": pay["refs"], "total": pay["total"]}


timeout = Workflow("timeout")


@timeout.phase()
def wait_paid(ctx: PhaseContext) -> dict[str, Any]:
    try:
        got = ctx.recv("paid", Paid, timeout=float(ctx.inputs["timeout"]))
    except NoAnswer as exc:
        trace(f"no message {exc.question} topic={exc.topic}")
        return {"timed_out": True}
    trace(f"paid {got.ref}")
    return {"timed_out": False, "ref": got.ref}


async_payment = Workflow("async-payment")


@async_payment.phase()
async def collect(ctx: AsyncPhaseContext) -> dict[str, Any]:
    trace("collect")
    first = await ctx.recv("paid", Paid)
    second = await ctx.recv("paid", Paid)
    trace(f"paid {first.ref} {second.ref}")
    return {"refs": [first.ref, second.ref]}
