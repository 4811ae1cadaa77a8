"""Workflows for the concurrency tests.

`gate` holds its only phase until the file named by `inputs["release"]`
exists, so a test decides when the holder may finish. `many` writes forty
checkpoints (each phase with a durable step), for readers and deciders to
hammer the store while it does.
"""

from __future__ import annotations

import time
from pathlib import Path

from phasegate import Workflow

gate = Workflow("test-gate")


@gate.phase()
def hold(ctx) -> dict:
    release = Path(ctx.inputs["release"])
    deadline = time.monotonic() + float(ctx.inputs.get("timeout", 60))
    while not release.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("nobody released the gate")
        time.sleep(0.005)
    return {"released": True}


many = Workflow("test-many")
PHASES = 40


def _make(i: int) -> None:
    def body(ctx, **prev) -> dict:
        pace = float(ctx.inputs.get("pace", 0))
        value = ctx.step("work", lambda: i * i, durable=True)
        if pace:
            time.sleep(pace)
        return {"i": i, "value": value}

    many.phase(f"p{i:02d}")(body)


for _i in range(PHASES):
    _make(_i)
