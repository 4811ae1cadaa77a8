"""Waiting for the console to be idle in Pilot tests."""

from __future__ import annotations

import asyncio

from textual.pilot import Pilot
from textual.worker import WorkerState


async def settle(pilot: Pilot[object]) -> None:
    """Wait until no read or write worker is busy and the messages they sent
    have been handled (the live watcher runs for ever, so it is not counted)."""
    app = pilot.app
    quiet = 0
    for _ in range(500):
        busy = [w for w in app.workers if w.group != "live" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        if busy:
            quiet = 0
            await asyncio.sleep(0.01)
            continue
        await pilot.pause()
        quiet += 1
        if quiet >= 2:
            return
    raise AssertionError("the app did not settle")
