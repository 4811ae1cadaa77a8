"""Effects whose completions wait for the run's next write (engine/run/completions.py).

One phase: three charges against a non-idempotent gateway (the ledger file),
a durable step after the second, then a wait. Kill points (PHASEGATE_TEST_KILL_AT):
  after:N        right after charge N returned to the phase (N = 1, 2, 3)
  after:step     right after the durable step returned
With DEFERRED_WAIT=FILE the phase, after the last charge, writes FILE and
waits (up to a minute) for FILE + ".go" before it returns: nothing is written
meanwhile, so only the timer can commit the last completion.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from phasegate import Workflow
from tests.support.waiting import until

wf = Workflow("deferred")


def point(name: str) -> None:
    if name in os.environ.get("PHASEGATE_TEST_KILL_AT", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


@wf.phase()
def pay(ctx) -> dict:
    ledger = Path(ctx.inputs["ledger"])

    def charge(key: str) -> dict:
        with ledger.open("a") as fh:
            fh.write(json.dumps({"key": key}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return {"id": "ch-" + key.rsplit("/", 1)[-1]}

    ids = []
    for n in (1, 2, 3):
        ids.append(ctx.effect(f"charge{n}", charge)["id"])
        point(f"after:{n}")
        if n == 2:
            ctx.step("note", lambda: len(ids), durable=True)
            point("after:step")
    wait = os.environ.get("DEFERRED_WAIT")
    if wait:
        Path(wait).write_text("waiting")
        until(Path(wait + ".go").exists, "the test's go-ahead", timeout=60, every=0.02)
    return {"ids": ids}
