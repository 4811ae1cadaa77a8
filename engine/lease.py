"""One process at a time per run: a lease with an owner, a heartbeat and an
expiry. Every write a run makes is fenced by `lease_owner = me`, so a process
whose lease was taken over cannot record anything after it lost it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update

from ._host import HOST, pid_alive
from .errors import LeaseLost
from .store.schema import runs
from .store.store import HotTx, Store

log = logging.getLogger("phasegate.lease")


def holder_alive(row: Any, now: float) -> bool:
    """Is the run's lease held by a live process? A dead pid on this host is
    known at once; elsewhere only the expiry can tell."""
    if row is None or row.lease_owner is None:
        return False
    if row.lease_expires_at is not None and row.lease_expires_at < now:
        return False
    if row.lease_host == HOST and row.lease_pid is not None:
        return pid_alive(int(row.lease_pid))
    return True


def holder_name(row: Any) -> str:
    return f"{row.lease_host}:{row.lease_pid}"


@dataclass(frozen=True)
class Fence:
    """This process's claim on one run. Every write the run makes checks it
    inside the same transaction, so a process that lost its lease records
    nothing after it lost it."""

    store: Store
    run_id: str
    owner: str

    def check(self, conn: Any, now: float) -> None:
        """For an ordinary write transaction: touch the run row as its owner."""
        if self.store.update_run(conn, self.run_id, {"updated_at": now}, owner=self.owner) == 0:
            raise LeaseLost(f"run {self.run_id!r}: lease lost; nothing recorded")

    def check_hot(self, tx: HotTx) -> None:
        """For a hot-path transaction: a locked read, not a write."""
        if not tx.fenced(self.run_id, self.owner):
            raise LeaseLost(f"run {self.run_id!r}: lease lost; nothing recorded")


class Heartbeat:
    """Extends the lease every third of its length, from a thread with its own
    connection, so a slow step does not let the lease lapse."""

    def __init__(self, store: Store, run_id: str, owner: str, ttl: float, clock: Callable[[], float]) -> None:
        self._store = store
        self._run_id = run_id
        self._owner = owner
        self._ttl = ttl
        self._clock = clock
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._loop, name=f"phasegate-heartbeat-{run_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._ttl / 3):
            try:
                with self._store.write() as conn:
                    now = self._clock()
                    n = conn.execute(
                        update(runs)
                        .where(runs.c.run_id == self._run_id, runs.c.lease_owner == self._owner)
                        .values(lease_expires_at=now + self._ttl, heartbeat_at=now)
                    ).rowcount
                if n == 0:
                    self.lost = True
                    return
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; the fence protects writes
                log.warning("heartbeat for %s failed: %s", self._run_id, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
