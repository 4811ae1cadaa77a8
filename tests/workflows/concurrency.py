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
from tests.support.waiting import until

gate = Workflow("test-gate")


@gate.phase()
def hold(ctx) -> dict:
    release = Path(ctx.inputs["release"])
    until(release.exists, "the test to release the gate", timeout=float(ctx.inputs.get("timeout", 60)), every=0.005)
    return {"released": True}


many = Workflow("test-many")
PHASES = 40


def _make(i: int) -> None:
    def body(ctx, **prev) -> dict:
        pace = float(ctx.inputs.get("pace", 0))
        value = ctx.step("work", lambda: i * i, durable=True)
        if pace:
            time.sleep(pace)  # sleep: the workflow's pace, which readers and deciders meet mid-run
        return {"i": i, "value": value}

    many.phase(f"p{i:02d}")(body)


for _i in range(PHASES):
    _make(_i)
