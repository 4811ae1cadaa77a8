"""What the phase contexts return, to an author's type checker (issue 41):
`ctx.ask` the question's type, `step`, `map` and `effect` their function's
result, in both contexts. Checked by `mypy` (tests/test_quality.py), never
run: a change that made one of them `Any` again fails `assert_type` here."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal, assert_type

from pydantic import BaseModel

from phasegate import AsyncPhaseContext, PhaseContext, Workflow

wf = Workflow("typed-ask")


class Refund(BaseModel):
    amount: int


class Choice(Enum):
    YES = "yes"
    NO = "no"


def count(text: str) -> int:
    return len(text)


async def acount(text: str) -> int:
    return len(text)


def send(key: str) -> str:
    return key


async def asend(key: str) -> str:
    return key


@wf.phase
def asks(ctx: PhaseContext) -> int:
    assert_type(ctx.ask("go", "Go on?", bool), bool)
    assert_type(ctx.ask("refund", "How much?", Refund), Refund)
    assert_type(ctx.ask("choice", "Which?", Choice), Choice)
    # No schema: any JSON value, the operator's own data. A type form that is no class: the same.
    assert_type(ctx.ask("any", "Anything?"), Any)
    assert_type(ctx.ask("which", "a or b?", Literal["a", "b"]), Any)
    assert_type(ctx.step("n", count, "abc", durable=True), int)
    assert_type(ctx.map("lens", count, ["a", "bc"]), list[int])
    assert_type(ctx.effect("send", send), str)
    return 1


@wf.phase
async def awaits(ctx: AsyncPhaseContext) -> int:
    assert_type(await ctx.ask("go", "Go on?", bool), bool)
    assert_type(await ctx.ask("refund", "How much?", Refund), Refund)
    assert_type(await ctx.ask("any", "Anything?"), Any)
    assert_type(await ctx.step("n", count, "abc"), int)
    assert_type(await ctx.step("an", acount, "abc", durable=True), int)
    assert_type(await ctx.map("lens", acount, ["a", "bc"]), list[int])
    assert_type(await ctx.map("lens", count, ["a", "bc"]), list[int])
    assert_type(await ctx.effect("send", send), str)
    assert_type(await ctx.effect("asend", asend), str)
    return 1
