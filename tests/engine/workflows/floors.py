"""A workflow for floors: `fetch` captures a moment of the outside world and
cannot be recomputed (rederivable=False); `enrich` cannot start without it;
`report` reads both but can run on whatever survives."""

from __future__ import annotations

import os
import signal

from phasegate import Workflow


def _trace(event: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(event + "\n")
    if event in os.environ.get("PHASEGATE_TEST_KILL_AT", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


wf = Workflow("floors")


@wf.phase(rederivable=False)
def fetch(ctx) -> dict:
    _trace("start:fetch")
    return {"rows": [1, 2, 3], "as_of": ctx.inputs.get("as_of", "t0")}


@wf.phase(needs=["fetch"])
def enrich(ctx, fetch) -> list[int]:
    _trace("start:enrich")
    return [r * 10 for r in fetch["rows"]]


@wf.phase(needs=["enrich", "fetch"], floor=[])
def report(ctx, enrich=None, fetch=None) -> dict:
    _trace("start:report")
    return {
        "sum": None if enrich is None else sum(enrich),
        "as_of": None if fetch is None else fetch["as_of"],
        "missing": sorted(ctx.missing),
    }
