"""An atomic effect on the engine's own database: an app ledger table written
through the session the engine passes, in the transaction that records the
effect's completion. PHASEGATE_TEST_KILL_AT=inside:<name> kills the process
after the ledger row is written (flushed) but before anything commits."""

from __future__ import annotations

import os
import signal

from sqlalchemy import text

from phasegate import Workflow

wf = Workflow("atomic-ledger")


def _trace(event: str) -> None:
    path = os.environ.get("PHASEGATE_TEST_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(event + "\n")


def _kill_at(point: str) -> None:
    if point in os.environ.get("PHASEGATE_TEST_KILL_AT", "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


@wf.phase()
def load(ctx) -> list[int]:
    _trace("start:load")
    return [300, 301]


@wf.phase(needs=["load"])
def book(ctx, load) -> list[dict]:
    _trace("start:book")
    out = []
    for i, amount in enumerate(load):
        name = f"book:{i}"

        def write(key: str, session, amount: int = amount, name: str = name) -> dict:
            session.execute(text("CREATE TABLE IF NOT EXISTS app_ledger (key TEXT PRIMARY KEY, amount INTEGER)"))
            session.execute(text("INSERT INTO app_ledger (key, amount) VALUES (:k, :a)"), {"k": key, "a": amount})
            session.flush()
            _kill_at(f"inside:{name}")
            return {"key": key, "amount": amount}

        out.append(ctx.effect(name, write, atomic=True))
        _kill_at(f"after:{name}")
    return out
