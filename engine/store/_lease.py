"""A run's lease: the `lease_*` and `heartbeat_at` columns of `phasegate_runs`
(the rest of the row is `_runs.py`'s). Whoever holds an unexpired lease may
write the run; every write of a holder is fenced on it.

Lease times come from one clock for every process that shares the store
(`Database.lease_clock`): SQLite's processes share this host's clock; on
PostgreSQL, processes on several hosts share the server's, never their own.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from ._database import Database
from ._hotpath import HotPath
from ._runs import RunChange, Runs

#: The lease columns of a run nobody holds.
LEASE_CLEARED: RunChange = {
    "lease_owner": None,
    "lease_host": None,
    "lease_pid": None,
    "lease_expires_at": None,
}


class Leases:
    """Fenced writes and reads of the runs' leases."""

    def __init__(self, db: Database, runs: Runs, hot_path: HotPath) -> None:
        self._db = db
        self._runs = runs
        self._sql = hot_path.sql

    def touch_fenced(self, conn: Connection, run_id: str, owner: str, now: float) -> int:
        """Mark the run changed, only while `owner` holds an unexpired lease.

        Returns:
            The rows changed: 0 means the lease is lost.
        """
        return self._runs.touch(conn, run_id, now, owner=owner)

    def extend(self, run_id: str, owner: str, now: float, ttl: float) -> int:
        """A heartbeat, in a write transaction of its own: push the expiry on,
        only while the lease is still `owner`'s and unexpired.

        Args:
            run_id: the run.
            owner: the lease's holder.
            now: the host's time (the lease clock's on PostgreSQL is read instead).
            ttl: seconds from now until the lease expires.

        Returns:
            The rows changed: 0 means it is lost (expired or revoked).

        Raises:
            StoreError: the store is read-only, or the database failed.
        """
        with self._db.write() as conn:
            now = self._db.lease_clock(conn, now)
            return self._runs.renew_lease(conn, run_id, owner, now + ttl, now)

    def release(self, run_id: str, owner: str) -> None:
        """Give up `owner`'s lease (expired or not), in a write transaction of
        its own; nothing if it is another's."""
        with self._db.write() as conn:
            self._runs.release_lease(conn, run_id, owner)

    def revoke(self, conn: Connection, run_id: str) -> None:
        """Clear whoever's lease it is, in the caller's transaction (a
        decision): every fenced write of the old holder then fails."""
        self._runs.clear_lease(conn, run_id)

    def held(self, run_id: str, owner: str, now: float) -> bool:
        """Whether `owner` holds an unexpired lease now: one read on the
        reused connection, a transaction of its own (the check right before
        an effect's call or a phase)."""
        with self._db.alone() as cur:
            cur.execute(self._sql["held"], {"run_id": run_id, "owner": owner, "now": now})
            return cur.fetchone() is not None
