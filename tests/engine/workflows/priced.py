"""One phase: a durable step computes the price, an effect charges it (a
non-idempotent gateway: one JSON line per call). `_price` is the code a
test "fixes" between a kill and a resume."""

from __future__ import annotations

import json
import os
import signal

from phasegate import Workflow

wf = Workflow("priced")


def _price() -> int:
    return 100


@wf.phase()
def charge(ctx) -> dict:
    price = ctx.step("price", _price, durable=True)

    def call(key: str) -> dict:
        if os.environ.get("PHASEGATE_TEST_KILL_AT") == "before:charge":
            os.kill(os.getpid(), signal.SIGKILL)
        with open(ctx.inputs["ledger"], "a") as fh:
            fh.write(json.dumps({"key": key, "amount": price}) + "\n")
        return {"amount": price}

    return ctx.effect("charge", call)
