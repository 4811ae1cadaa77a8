"""A workflow whose middle phase raises until its code is fixed."""

from __future__ import annotations

import os

from phasegate import Workflow

wf = Workflow("flaky")


def _trace(event: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(event + "\n")


@wf.phase()
def gather(ctx) -> list[int]:
    _trace("start:gather")
    return [1, 2, 3]


@wf.phase(needs=["gather"])
def divide(ctx, gather) -> list[float]:
    _trace("start:divide")
    divisor = 0  # the bug
    return [g / divisor for g in gather]


@wf.phase(needs=["divide"])
def total(ctx, divide) -> float:
    _trace("start:total")
    return sum(divide)
