"""A workflow that reports progress over a loop, for the progress and follow tests.

Inputs: `items` (how many, default 10000), `pace` (seconds each item takes,
default 0: the loop as fast as it goes), `steps` (save each item as a
durable step, so `follow` has steps to show and a resume has work to skip),
`gate` (a file path: the loop waits for it to exist before the last item,
so a test can hold a run mid-phase for as long as it looks at it), `say`
(text put before each item's message: a test's hostile text), `report`
(false: the same loop without `ctx.progress`).
"""

from __future__ import annotations

import os
import time
from typing import Any

from phasegate import PhaseContext, Workflow

wf = Workflow("progressing")


def _item(i: int) -> int:
    return i * i


@wf.phase()
def load(ctx: PhaseContext) -> dict[str, Any]:
    n = int(ctx.inputs.get("items", 10000))
    pace = float(ctx.inputs.get("pace", 0))
    steps = bool(ctx.inputs.get("steps", False))
    gate = ctx.inputs.get("gate")
    say = str(ctx.inputs.get("say", ""))
    report = bool(ctx.inputs.get("report", True))
    total = 0
    for i in range(n):
        if gate and i == n - 1:
            while not os.path.exists(gate):
                time.sleep(0.02)  # sleep: the test's gate is a file, not an event this process can wait on
        total += ctx.step(f"item-{i}", _item, i, durable=True) if steps else _item(i)
        if report:
            ctx.progress(i + 1, n, f"{say}item {i}")
        if pace:
            time.sleep(pace)  # sleep: each item takes this long, so a watcher sees the bar move
    return {"total": total}


@wf.phase(needs=["load"])
def report(ctx: PhaseContext, load: dict[str, Any]) -> dict[str, Any]:
    return {"sum": load["total"]}
