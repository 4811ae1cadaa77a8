"""Two effects of one phase whose keys share an ending: `r/pay/a/b` and
`r/pay/b`. The first is left in doubt when the process is SIGKILLed inside
its call (PHASEGATE_TEST_KILL_AT=in:a/b)."""

from __future__ import annotations

import os
import signal

from phasegate import Workflow

wf = Workflow("test-shared-endings")


@wf.phase()
def pay(ctx) -> list[str]:
    def call(key: str) -> str:
        if os.environ.get("PHASEGATE_TEST_KILL_AT") == "in:" + key.rsplit("/pay/", 1)[1]:
            os.kill(os.getpid(), signal.SIGKILL)
        return key

    return [ctx.effect("a/b", call), ctx.effect("b", call)]
