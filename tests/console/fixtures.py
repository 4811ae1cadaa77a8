"""A store holding one run of each kind an operator meets, made by REAL
engine runs in-process under a frozen clock, then damaged the way disks and
deploys damage them. Deterministic: fixed run ids, inputs and times."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from phasegate import Engine
from tests.console import wf as fixture_wf

HOST = socket.gethostname()
T0 = 1_780_000_000.0  # 2026-05-28T20:26:40Z
LEASE = 30.0
#: The console's "now": every interrupted lease has lapsed, the live one has not.
NOW = T0 + 3600.0

OPERATOR = "ops-ana"

INTERRUPTED = "inv-0002-interrupted"
IN_DOUBT = "inv-0003-in-doubt"
INTEGRITY = "inv-0004-integrity"
ENV_MISMATCH = "inv-0005-env"
BELOW_FLOOR = "inv-0006-below-floor"
FAILED = "inv-0007-failed"
COMPLETED = "inv-0001-completed"
RUNNING = "inv-0008-running"

STOPPED = {
    "interrupted": INTERRUPTED,
    "integrity": INTEGRITY,
    "env_mismatch": ENV_MISMATCH,
    "in_doubt": IN_DOUBT,
    "below_floor": BELOW_FLOOR,
    "prune": COMPLETED,
}


class Clock:
    """A clock that moves only when told."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def _run(engine: Engine, clock: Clock, run_id: str, *, interrupt: str | None = None, fail: str | None = None) -> None:
    fixture_wf.HOOKS.update(interrupt=interrupt, fail=fail)
    try:
        engine.run(fixture_wf.wf, run_id, {"invoices": 2})
    except KeyboardInterrupt:
        pass  # the process "died": its lease stays held until it lapses
    finally:
        fixture_wf.HOOKS.update(interrupt=None, fail=None)
    clock.advance(60)  # past the lease: the next run may take it over


def _sql(db: Path, statement: str, *args: object) -> None:
    con = sqlite3.connect(db)
    try:
        con.execute(statement, args)
        con.commit()
    finally:
        con.close()


@contextmanager
def quiet_engine() -> Iterator[None]:
    """The runs below fail and block on purpose; their log lines are noise.
    The level is restored so other tests' log assertions are unaffected."""
    log = logging.getLogger("phasegate")
    before = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(before)


def build(db: Path) -> None:
    """Write the fixture store to `db` (which must not exist)."""
    with quiet_engine():
        _build(db)


def _build(db: Path) -> None:
    clock = Clock(T0)
    fixture_wf.HOOKS["tax"] = "tax-2026-01"
    engine = Engine(db, clock=clock, lease_seconds=LEASE, retention_days=30)
    try:
        # completed: its superseded step records and unneeded outputs are prune candidates
        _run(engine, clock, COMPLETED)

        # in doubt: interrupted inside the charge of inv-1, then started again
        _run(engine, clock, IN_DOUBT, interrupt="effect:charge:inv-1")
        _run(engine, clock, IN_DOUBT)

        # integrity: fetch's saved output is damaged on disk (one byte flipped)
        _run(engine, clock, INTEGRITY, interrupt="charge")
        _sql(
            db,
            "UPDATE phasegate_checkpoints SET output_json = replace(output_json, '100', '900') "
            "WHERE run_id = ? AND phase = 'fetch'",
            INTEGRITY,
        )
        _run(engine, clock, INTEGRITY)

        # env mismatch: the tax table changed while the run was stopped
        _run(engine, clock, ENV_MISMATCH, interrupt="charge")
        fixture_wf.HOOKS["tax"] = "tax-2026-02"
        _run(engine, clock, ENV_MISMATCH)
        fixture_wf.HOOKS["tax"] = "tax-2026-01"

        # below floor: fetch's output is lost and fetch cannot be re-run
        _run(engine, clock, BELOW_FLOOR, interrupt="price")
        _sql(
            db, "UPDATE phasegate_checkpoints SET output_json = NULL WHERE run_id = ? AND phase = 'fetch'", BELOW_FLOOR
        )
        _run(engine, clock, BELOW_FLOOR)

        # failed: the gateway refused (the message holds brackets, shown literally)
        _run(engine, clock, FAILED, fail="gateway said 402 [payment required]")

        # interrupted: the process died at the start of charge, lease long lapsed
        _run(engine, clock, INTERRUPTED, interrupt="charge")

        # running: interrupted moments before NOW. An interrupted run gives
        # its lease up on the way out, so the lease of a live holder (this
        # process) that has not lapsed yet is put back as it was held.
        clock.t = NOW - 5
        _run(engine, clock, RUNNING, interrupt="report")
        _sql(
            db,
            "UPDATE phasegate_runs SET lease_owner = ?, lease_host = ?, lease_pid = ?, lease_expires_at = ?"
            " WHERE run_id = ?",
            f"{HOST}:{os.getpid()}:fixture",
            HOST,
            os.getpid(),
            NOW - 5 + LEASE,
            RUNNING,
        )
    finally:
        engine.close()
        fixture_wf.HOOKS["tax"] = "tax-2026-01"


#: Three more runs stopped by the same tax-table change as ENV_MISMATCH: with
#: it, one cause of four runs (#13: many runs at once).
SAME_TAX_CHANGE = ("inv-0011-env", "inv-0012-env", "inv-0013-env")


def add_tax_cause(db: Path) -> None:
    """Add `SAME_TAX_CHANGE` to a copy of the fixture store, the way
    ENV_MISMATCH got there (interrupted before charge, the table changed)."""
    clock = Clock(T0 + 1800)
    with quiet_engine():
        engine = Engine(db, clock=clock, lease_seconds=LEASE, retention_days=30)
        try:
            for rid in SAME_TAX_CHANGE:
                fixture_wf.HOOKS["tax"] = "tax-2026-01"
                _run(engine, clock, rid, interrupt="charge")
                fixture_wf.HOOKS["tax"] = "tax-2026-02"
                _run(engine, clock, rid)
        finally:
            engine.close()
            fixture_wf.HOOKS["tax"] = "tax-2026-01"
    _checkpoint_wal(db)


_CACHE: dict[str, Path] = {}


def fixture_db(tmp_path: Path, cache_dir: Path) -> Path:
    """A fresh copy of the fixture store (built once per session)."""
    master = _CACHE.get("master")
    if master is None:
        master = cache_dir / "fixture.db"
        if master.exists():
            master.unlink()
        build(master)
        _checkpoint_wal(master)
        _CACHE["master"] = master
    db = tmp_path / "runs.db"
    shutil.copy(master, db)
    return db


def _checkpoint_wal(db: Path) -> None:
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def frozen(t: float = NOW) -> Callable[[], float]:
    return lambda: t
