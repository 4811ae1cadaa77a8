"""One process at a time per run: a lease with an owner, a heartbeat and an
expiry.

The lease is held only while it is unexpired. Every write a run makes is
fenced by `lease_owner = me AND lease_expires_at > now`, in the same
transaction as the write; a heartbeat cannot extend a lease that already
expired, and every operator decision clears the lease (revokes it). So a
process that was frozen past its lease (SIGSTOP, a VM migration, a long GC)
records nothing when it thaws, and calls no effect: the lease is checked
once more (`Fence.ensure`) immediately before an effect's function runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from .._host import HOST, pid_alive
from ..errors import LeaseLost
from ..observe import hooks

if TYPE_CHECKING:  # the store's module loads SQLAlchemy: `phasegate status` reads leases without it
    from ..store.store import HotTx, Store

log = logging.getLogger("phasegate.lease")


#: Seconds after a committed fenced transaction began within which
#: `Fence.ensure` trusts it instead of reading the lease again: longer than a
#: local commit (PostgreSQL's fsync included), far shorter than any freeze
#: that can let a lease lapse (it lasts seconds, and is extended every third).
RECHECK_AFTER = 0.005


class HolderState(StrEnum):
    """Who, if anyone, may be working on a run right now."""

    NONE = "none"
    """No lease is recorded."""
    LIVE = "live"
    """The lease is unexpired (and its process is not known to be dead)."""
    STALLED = "stalled"
    """The lease expired, but its process is alive on this host: frozen,
    starved or waiting on a lock. It may wake and carry on with a call it
    already started, so taking the run over needs `--force`."""
    GONE = "gone"
    """Its process died (seen by pid on this host), or its lease on another
    host expired."""


def holder_state(row: Any, now: float) -> HolderState:
    """The one rule for "is anyone working on this run". The pid is looked at
    before the expiry: a live process on this host past its lease is not dead."""
    if row is None or row.lease_owner is None:
        return HolderState.NONE
    local = row.lease_host == HOST and row.lease_pid is not None
    if local and not pid_alive(int(row.lease_pid)):
        return HolderState.GONE
    # No expiry recorded is no lease: it can never be held for ever.
    if row.lease_expires_at is not None and row.lease_expires_at > now:
        return HolderState.LIVE
    return HolderState.STALLED if local else HolderState.GONE


def holder_alive(row: Any, now: float) -> bool:
    """Is the run's lease held (unexpired) by a process that may still write?"""
    return holder_state(row, now) is HolderState.LIVE


def holder_name(row: Any) -> str:
    return f"{row.lease_host}:{row.lease_pid}"


#: What taking a stalled holder's run over risks, said wherever `--force` is offered.
FORCE_RISK = (
    "it may be frozen in the middle of an effect's call and finish that call when it thaws, "
    "so an effect could happen twice"
)


@dataclass(frozen=True)
class FenceToken:
    """Handed to an effect's function that declares a `fence` parameter. A
    target that can reject stale requests keeps, per `key`, the highest
    (epoch, attempt) it has seen and refuses any request below it: a process
    frozen past its lease then cannot act after the run was taken over."""

    run_id: str
    epoch: int
    attempt: int
    key: str


class Fence:
    """This process's claim on one run. Every write the run makes checks it
    inside the same transaction, so a process that lost its lease (taken over,
    revoked by a decision, or simply expired) records nothing after it lost it."""

    def __init__(self, store: Store, run_id: str, owner: str, clock: Callable[[], float]) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.clock = clock
        self.epoch = 0
        """The run's epoch when the lease was taken (a reset starts a new one)."""
        self._verified: tuple[float, float] | None = None
        """When the last fenced transaction that committed began (`verified`)."""

    def _lost(self) -> LeaseLost:
        self._verified = None
        return LeaseLost(f"run {self.run_id!r}: lease lost; nothing recorded")

    @staticmethod
    def stamp() -> tuple[float, float]:
        """Taken just before a fenced transaction begins (both clocks)."""
        return time.monotonic(), time.time()

    def verified(self, at: tuple[float, float]) -> None:
        """A fenced transaction that began at `at` (`stamp`) committed: the
        lease was ours, and held by its lock, from then until its commit."""
        self._verified = at

    def lost(self, message: str) -> LeaseLost:
        """The error for a fenced write that found the lease gone."""
        self._verified = None
        return LeaseLost(message)

    def check(self, conn: Any, now: float) -> None:
        """For an ordinary write transaction: touch the run row as its owner."""
        if self.store.lease.touch_fenced(conn, self.run_id, self.owner, now) == 0:
            raise self._lost()

    def check_hot(self, tx: HotTx) -> None:
        """For a hot-path transaction: a locked read, not a write."""
        if not tx.fenced(self.run_id, self.owner, self.clock()):
            raise self._lost()

    def check_rows(self, n: int) -> None:
        """For a hot transaction whose own write to the run row was fenced:
        0 rows written means the lease is gone."""
        if n == 0:
            raise self._lost()

    def ensure(self) -> None:
        """Immediately before an effect's function or a phase is called: is
        the lease still ours and unexpired? A read on the reused connection,
        no lock; skipped when a fenced transaction that began less than
        RECHECK_AFTER ago committed (`verified`): the lease was checked, and
        held by that transaction's lock, that recently, and a revocation in
        so short a gap is no different from one landing just after the call
        starts, which no check can see. Both clocks: a suspended VM stops the
        monotonic one, a clock step moves the wall one; either forces the read."""
        at = self._verified
        if at is not None:
            if time.monotonic() - at[0] <= RECHECK_AFTER and abs(time.time() - at[1]) <= RECHECK_AFTER:
                return
            self._verified = None
        if not self.store.lease.held(self.run_id, self.owner, self.clock()):
            raise self._lost()

    def release(self) -> None:
        """Give the lease up, if it is still ours (after the run stopped on an
        error), so the run shows as interrupted and can be resumed at once
        instead of waiting for the lease, or looking stalled in a worker that
        lives on. Best effort: the lease lapses anyway."""
        try:
            self.store.lease.release(self.run_id, self.owner)
        except Exception as exc:  # noqa: BLE001 - the store may be what failed
            log.warning("run %s: could not release its lease: %s", self.run_id, exc)


class Heartbeat:
    """Extends the lease every third of its length, from a thread with its own
    connection, so a slow step does not let the lease lapse. It never extends
    an expired or revoked lease: once lost, lost."""

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
                n = self._store.lease.extend(self._run_id, self._owner, self._clock(), self._ttl)
                if n == 0:
                    self.lost = True
                    return
                hooks.OBSERVER.heartbeat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; the fence protects writes
                log.warning("heartbeat for %s failed: %s", self._run_id, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
