"""A workflow that carries hostile-looking data through every place the
engine stores something: inputs, a durable step, an effect's result, a phase
output, and (in `fails`) the error an operator reads."""

from __future__ import annotations

from phasegate import Workflow

wf = Workflow("test-inert")


@wf.phase()
def carry(ctx) -> dict:
    payloads = ctx.inputs["payloads"]
    stepped = ctx.step("echo", lambda: payloads, durable=True)
    effected = ctx.effect("echo", lambda key: {"key": key, "payloads": payloads})
    return {"inputs": payloads, "step": stepped, "effect": effected["payloads"]}


@wf.phase(needs=["carry"])
def check(ctx, carry) -> dict:
    return {"same": carry["inputs"] == carry["step"] == carry["effect"], **carry}


fails = Workflow("test-inert-fails")


@fails.phase()
def explode(ctx) -> dict:
    raise RuntimeError(ctx.inputs["message"])
