"""A phase that catches every Exception around its effect (a common way to
"keep going when the gateway fails"): the engine's own stops must get through."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from phasegate import Workflow

wf = Workflow("swallow")


@wf.phase()
def charge(ctx) -> dict:
    ledger = Path(ctx.inputs["ledger"])

    def call(key: str) -> dict:
        with ledger.open("a") as fh:
            fh.write(json.dumps({"key": key}) + "\n")
        if os.environ.get("PHASEGATE_TEST_KILL_AT") == "after:charge":
            os.kill(os.getpid(), signal.SIGKILL)
        return {"ok": True}

    # The developer may learn that the gateway does not deduplicate after all.
    idempotent = os.environ.get("SWALLOW_IDEMPOTENT") == "1"
    try:
        res = ctx.effect("charge", call, idempotent=idempotent)
    except Exception as exc:  # noqa: BLE001 - the pattern under test
        return {"ok": False, "error": str(exc)}
    if os.environ.get("PHASEGATE_TEST_KILL_AT") == "after:effect":
        os.kill(os.getpid(), signal.SIGKILL)
    return res
