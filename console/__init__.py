"""phasegate's operations console: triage paused and failed runs, live.

It reads and writes the store only through the engine's public API, so the
console and the command line always agree."""

from __future__ import annotations

import time
from collections.abc import Callable


def run_console(
    db: str,
    *,
    read_only: bool = False,
    mouse: bool = True,
    clock: Callable[[], float] = time.time,
    run_id: str | None = None,
    show: str | None = None,
    text: str | None = None,
) -> int:
    """Open the console on `db` until the operator quits; returns an exit code.
    `run_id` opens that run's detail; `show` (a status filter's name) and
    `text` open the list filtered.

    Opening the store happens before the screen takes over the terminal, so a
    bad path is one line on stderr (a `PhasegateError`), not a broken screen."""
    # Imported when the console opens: every `phasegate` command imports this
    # package to register `console`, and the engine loads SQLAlchemy.
    from phasegate import Engine

    from . import service
    from .app import ConsoleApp

    engine = Engine(db, create=False, readonly=read_only, clock=clock)
    try:
        start = service.start_at(engine, run_id, show, text)
        app = ConsoleApp(engine, read_only=read_only, clock=clock, start=start)
        app.run(mouse=mouse)
        return app.return_code or 0
    finally:
        engine.close()


__all__ = ["run_console"]
