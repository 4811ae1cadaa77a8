"""A workflow with flaky parts, for tests/engine/test_author_retries.py and
the console's retry test: run through
`phasegate run`, resumed, and taken up by the worker.

Each flaky call counts itself in a file under the inputs' `dir`, and fails
while its count is below the inputs' threshold for it, so a test says how
many attempts a step or a phase needs.
"""

from __future__ import annotations

import time
from pathlib import Path

from phasegate import PhaseContext, Workflow

wf = Workflow("retrying")


def count(ctx: PhaseContext, what: str) -> int:
    """Record one call of `what`; return how many there have been."""
    with open(Path(ctx.inputs["dir"]) / "calls.txt", "a") as fh:
        fh.write(what + "\n")
    return (Path(ctx.inputs["dir"]) / "calls.txt").read_text().split().count(what)


def fetch(ctx: PhaseContext) -> str:
    n = count(ctx, "fetch")
    if n < ctx.inputs.get("fetch_ok_at", 1):
        raise ConnectionError(f"the source dropped the connection (call {n})")
    if ctx.inputs.get("fetch_bad"):
        raise ValueError("the source sent garbage")
    return "page"


@wf.phase()
def gather(ctx: PhaseContext) -> str:
    return ctx.step(
        "fetch",
        fetch,
        ctx,
        durable=True,
        retries=ctx.inputs.get("fetch_retries", 3),
        backoff=0.01,
        retry_on=(ConnectionError,),
    )


def price(ctx: PhaseContext) -> int:
    count(ctx, "price")
    return 42


@wf.phase(needs=["gather"], retries=2, backoff=0.01)
def bill(ctx: PhaseContext, gather: str) -> int:
    amount = ctx.step("price", price, ctx, durable=True)

    def charge(key: str) -> str:
        count(ctx, "charge")
        if ctx.inputs.get("charge_fails"):
            raise TimeoutError("the gateway did not answer")
        return key

    ctx.effect("charge", charge)
    n = count(ctx, "bill")
    if n == 2 and (Path(ctx.inputs["dir"]) / "hang").exists():
        (Path(ctx.inputs["dir"]) / "hung").touch()
        time.sleep(600)  # sleep: the test SIGKILLs the process in the phase's second attempt
    if n < ctx.inputs.get("bill_ok_at", 1):
        raise RuntimeError("the ledger was locked")
    return amount
