"""An effect whose target rejects stale requests with the fencing token
(the pattern the README describes): the target keeps, per key, the highest
(epoch, attempt) it has seen and refuses anything below it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from phasegate import Workflow

wf = Workflow("fenced")


class StaleRequest(Exception):
    pass


def target_send(path: Path, key: str, epoch: int, attempt: int) -> dict:
    seen = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    top = max(((s["epoch"], s["attempt"]) for s in seen if s["key"] == key), default=(-1, -1))
    if (epoch, attempt) < top:
        raise StaleRequest(f"{key}: ({epoch}, {attempt}) is older than ({top[0]}, {top[1]})")
    with path.open("a") as fh:
        fh.write(json.dumps({"key": key, "epoch": epoch, "attempt": attempt}) + "\n")
    return {"sent": True, "attempt": attempt}


@wf.phase()
def send(ctx) -> dict:
    target = Path(ctx.inputs["target"])

    def call(key: str, fence) -> dict:
        res = target_send(target, key, fence.epoch, fence.attempt)
        if os.environ.get("PHASEGATE_TEST_KILL_AT") == "after-send" and fence.attempt == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return {**res, "run": fence.run_id, "key_matches": fence.key == key}

    return ctx.effect("notify", call, idempotent=True)
