"""A phase that raises what `except Exception` does not catch: SystemExit
(inputs {"raise": "exit"}) or asyncio.CancelledError ({"raise": "cancel"});
any other run completes. `PHASEGATE_TEST_KILL_AT=start` kills it first, so a
worker has it to pick up."""

from __future__ import annotations

import asyncio
import os
import signal

from phasegate import Workflow

wf = Workflow("exits")


@wf.phase()
def only(ctx) -> str:
    if os.environ.get("PHASEGATE_TEST_KILL_AT") == "start":
        os.kill(os.getpid(), signal.SIGKILL)
    what = ctx.inputs.get("raise")
    if what == "exit":
        raise SystemExit(0)
    if what == "cancel":
        raise asyncio.CancelledError("cancelled by the phase")
    return "ok"
