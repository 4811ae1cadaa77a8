"""A store of runs that wait (issue 27), made by REAL engine runs in-process
under a frozen clock: runs asking each kind of question, a refund agent's
question asked by two runs (one cause), a timer, a rate limit, a paused run
and a cancelled one. Deterministic: fixed run ids, inputs and times."""

from __future__ import annotations

import shutil
from pathlib import Path

from phasegate import Engine
from tests.console import asking
from tests.console.fixtures import LEASE, NOW, Clock, quiet_engine
from tests.workflows import waits

#: The runs were parked ten minutes before the console's "now".
PARKED = NOW - 600

ASKS = {kind: f"ask-{kind}" for kind in asking.SCHEMAS}
REFUNDS = ("refund-a17", "refund-b22")
TIMER = "timer-cool-down"
LIMITED = "limited-model"
PAUSED = "refund-paused"
CANCELLED = "refund-cancelled"


def build(db: Path, scratch: Path) -> None:
    """Write the store to `db` (which must not exist); `scratch`: a folder for the rate limit's counter."""
    clock = Clock(PARKED)
    with quiet_engine(), Engine(db, clock=clock, lease_seconds=LEASE) as engine:
        for kind, run_id in ASKS.items():
            engine.run(asking.asks, run_id, {"kind": kind, "job": f"J-{kind}"})
        for run_id in REFUNDS:
            engine.run(waits.refund, run_id, {"order": run_id.split("-")[1].upper()})
        engine.run(waits.timer, TIMER, {"seconds": 3600})
        counter = scratch / "counter"
        counter.unlink(missing_ok=True)
        engine.run(waits.limited, LIMITED, {"counter": str(counter), "times": 3, "after": 1800})
        for run_id in (PAUSED, CANCELLED):
            engine.run(waits.refund, run_id, {"order": "C-3"})
        engine.decide(PAUSED, "pause", reason="checking the customer's history", operator="ada")
        engine.decide(CANCELLED, "cancel", reason="the customer withdrew", operator="ada")


_CACHE: dict[str, Path] = {}


def waits_db(tmp_path: Path, cache_dir: Path) -> Path:
    """A fresh copy of the store (built once per session)."""
    master = _CACHE.get("master")
    if master is None:
        master = cache_dir / "waits.db"
        if master.exists():
            master.unlink()
        build(master, cache_dir)
        _CACHE["master"] = master
    db = tmp_path / "waits.db"
    shutil.copy(master, db)
    return db
