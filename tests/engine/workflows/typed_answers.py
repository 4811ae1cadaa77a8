"""Questions whose type says more than their JSON Schema can (#38, finding 1):
an amount with a validator, a plain int, a pydantic model. Each phase writes
what it received, with its Python type, to $PHASEGATE_TEST_TRACE."""

from __future__ import annotations

import os
from typing import Annotated

from pydantic import AfterValidator, BaseModel

from phasegate import AsyncPhaseContext, PhaseContext, Workflow


def at_most_1000(v: int) -> int:
    if v > 1000:
        raise ValueError("at most 1000")
    return v


class Refund(BaseModel):
    approved: bool
    amount: int


def trace(line: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")


wf = Workflow("typed-answers")


@wf.phase()
def amount(ctx: PhaseContext) -> int:
    got = ctx.ask("amount", "How much?", Annotated[int, AfterValidator(at_most_1000)])
    trace(f"amount {type(got).__name__} {got!r}")
    return int(got)


@wf.phase()
def count(ctx: PhaseContext) -> int:
    got = ctx.ask("count", "How many?", int)
    trace(f"count {type(got).__name__} {got!r}")
    return int(got)


@wf.phase()
async def refund(ctx: AsyncPhaseContext) -> bool:
    got = await ctx.ask("refund", "Refund?", Refund)
    trace(f"refund {type(got).__name__} {got.approved} {got.amount}")
    return bool(got.approved)
