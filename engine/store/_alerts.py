"""The alerts table (`phasegate_alerts`): one row per stopped run announced
(or being announced) by a watch, keyed by the stop, so that two watches never
send the same alert and a watch that died mid-send is taken over. A store
opened read-only before its upgrade may lack it: then nothing was announced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Row

from ._database import Database
from .schema import alerts


class Alerts:
    """Reads and writes of the alerts table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def announced(self, conn: Connection, keys: Sequence[str]) -> dict[str, Row[Any]]:
        """The alert rows of these stops that exist (claimed, sent or failed)."""
        if "phasegate_alerts" not in self._db.tables or not keys:
            return {}
        q = select(alerts).where(alerts.c.stop_key.in_(list(keys)))
        return {r.stop_key: r for r in conn.execute(q)}

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """The alert rows of one run, oldest claim first."""
        if "phasegate_alerts" not in self._db.tables:
            return []
        q = select(alerts).where(alerts.c.run_id == run_id).order_by(alerts.c.claimed_at)
        return list(conn.execute(q))

    def prune_sent(self, conn: Connection, run_id: str, keys: Sequence[str]) -> int:
        """Remove these alert rows of the run (`prune`: sent, their stop over).

        Returns:
            How many were removed.
        """
        if not keys:
            return 0
        q = delete(alerts).where(alerts.c.run_id == run_id, alerts.c.stop_key.in_(list(keys)), alerts.c.state == "sent")
        return int(conn.execute(q).rowcount or 0)

    def claim(
        self, conn: Connection, stop_key: str, run_id: str, status: str, owner: str, at: float, event_json: str
    ) -> None:
        """Claim a stop's alert (`stop_key`) for the watch `owner`, with the event it is to send.

        Raises:
            IntegrityError: another watch claimed the stop first.
        """
        conn.execute(
            insert(alerts).values(
                stop_key=stop_key,
                run_id=run_id,
                status=status,
                state="claimed",
                claimed_by=owner,
                claimed_at=at,
                event_json=event_json,
            )
        )

    def reclaim(self, conn: Connection, key: str, owner: str, now: float, stale_before: float) -> bool:
        """Take over a claim whose watch died before it could send.

        Returns:
            Whether `owner` holds the claim now.
        """
        n = conn.execute(
            update(alerts)
            .where(alerts.c.stop_key == key, alerts.c.state == "claimed", alerts.c.claimed_at < stale_before)
            .values(claimed_by=owner, claimed_at=now)
        ).rowcount
        return bool(n)

    def renew(self, conn: Connection, key: str, owner: str, now: float) -> bool:
        """Keep `owner`'s claim fresh while its send goes on, so that no other
        watch takes it over as the claim of a watch that died.

        Returns:
            Whether `owner` still holds the claim.
        """
        n = conn.execute(
            update(alerts)
            .where(alerts.c.stop_key == key, alerts.c.state == "claimed", alerts.c.claimed_by == owner)
            .values(claimed_at=now)
        ).rowcount
        return bool(n)

    def release(self, conn: Connection, key: str, owner: str) -> None:
        """Give up `owner`'s claim (nothing is known to have arrived): the next watch sends it."""
        conn.execute(delete(alerts).where(alerts.c.stop_key == key, alerts.c.claimed_by == owner))

    def settle(self, conn: Connection, key: str, owner: str, values: dict[str, Any]) -> None:
        """Record how `owner`'s send of the stop's alert ended."""
        conn.execute(update(alerts).where(alerts.c.stop_key == key, alerts.c.claimed_by == owner).values(**values))
