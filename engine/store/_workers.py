"""The workers table (`phasegate_workers`): one heartbeat row per worker
process, kept bounded by pruning. A store opened read-only before its upgrade
may lack it: then no worker was ever seen.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Row

from ._database import Database
from .schema import workers


class Workers:
    """Reads and writes of the workers table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def beat(self, values: dict[str, Any]) -> float:
        """Write one worker's heartbeat row (inserted the first time), its
        `last_seen` the lease clock's now, in a write transaction of its own.

        Args:
            values: the row's columns; `last_seen` the host's time.

        Returns:
            The lease clock's time written as `last_seen`.

        Raises:
            StoreError: the store is read-only, or the database failed.
        """
        with self._db.write() as conn:
            now = self._db.lease_clock(conn, float(values["last_seen"]))
            values = {**values, "last_seen": now}
            if values.get("state") == "stopped":
                values["stopped_at"] = now
            if "phasegate_workers" not in self._db.tables:
                return now
            key = values["worker_id"]
            n = conn.execute(update(workers).where(workers.c.worker_id == key).values(**values)).rowcount
            if n == 0:
                conn.execute(insert(workers).values(**{**values, "started_at": values.get("started_at", now)}))
            return now

    def recent(self, conn: Connection, *, limit: int = 100) -> list[Row[Any]]:
        """The workers seen most recently first (at most `limit`)."""
        if "phasegate_workers" not in self._db.tables:
            return []
        q = select(workers).order_by(workers.c.last_seen.desc(), workers.c.worker_id).limit(limit)
        return list(conn.execute(q))

    def prune(self, conn: Connection, *, seen_before: float, keep: int) -> int:
        """Delete the rows of workers not seen since `seen_before` (stopped,
        or dead without a clean exit), and any stopped rows past the `keep`
        most recent: the table stays bounded however often workers restart.

        Returns:
            How many rows were deleted.
        """
        if "phasegate_workers" not in self._db.tables:
            return 0
        n = conn.execute(delete(workers).where(workers.c.last_seen < seen_before)).rowcount
        recent = (
            select(workers.c.worker_id)
            .where(workers.c.state == "stopped")
            .order_by(workers.c.last_seen.desc())
            .limit(keep)
        )
        n += conn.execute(
            delete(workers).where(workers.c.state == "stopped", workers.c.worker_id.not_in(recent))
        ).rowcount
        return int(n)
