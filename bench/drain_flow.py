"""The workflow the PostgreSQL drain figure's workers resume (`bench/postgres.py`):
three phases that each wait on I/O (a sleep), so a worker's time is the wait
plus coordination (pick-up, lease, checkpoints), not CPU."""

from __future__ import annotations

import os
import time
from typing import Any

from phasegate import Workflow

wf = Workflow("drain")

#: Seconds each phase waits (the bench sets it in the workers' environment).
WAIT = float(os.environ.get("PHASEGATE_BENCH_WAIT", "0.05"))


@wf.phase()
def fetch(ctx: Any) -> dict[str, Any]:
    time.sleep(WAIT)
    return {"rows": [{"id": i, "amount": 100 + i} for i in range(8)]}


@wf.phase(needs=["fetch"])
def price(ctx: Any, fetch: dict[str, Any]) -> dict[str, Any]:
    time.sleep(WAIT)
    return {"total": sum(r["amount"] for r in fetch["rows"])}


@wf.phase(needs=["price"])
def report(ctx: Any, price: dict[str, Any]) -> dict[str, Any]:
    time.sleep(WAIT)
    return {"report": f"total {price['total']}"}
