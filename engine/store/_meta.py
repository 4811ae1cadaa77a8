"""The store's own facts (`phasegate_meta`) beside its schema version: where
the policy's history ends (`policy_last`, `policy_count`: history/trail.py)
and the key the store's seals are made under (`seal_key`: history/keys.py).
"""

from __future__ import annotations

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from ._database import Database
from .schema import POLICY_COUNT, POLICY_HEAD, POLICY_LAST, SEAL_KEY, meta

__all__ = ["POLICY_COUNT", "POLICY_HEAD", "POLICY_LAST", "SEAL_KEY", "Meta"]


class Meta:
    """Reads and writes of the meta table's keys other than the schema version."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, conn: Connection, key: str, *, lock: bool = False) -> str | None:
        """A value (None when the key was never written); with `lock`, its row
        held until the transaction ends where the backend has row locks."""
        q = select(meta.c.value).where(meta.c.key == key)
        if lock and self._db.dialect.row_locks:
            q = q.with_for_update()
        v = conn.execute(q).scalar()
        return None if v is None else str(v)

    def put(self, conn: Connection, key: str, value: str) -> None:
        """Write a value, adding its row the first time."""
        if conn.execute(update(meta).where(meta.c.key == key).values(value=value)).rowcount == 0:
            conn.execute(insert(meta).values(key=key, value=value))

    def several(self, conn: Connection, keys: tuple[str, ...]) -> dict[str, str]:
        """Several values in one read (a key never written is left out)."""
        q = select(meta.c.key, meta.c.value).where(meta.c.key.in_(keys))
        return {str(k): str(v) for k, v in conn.execute(q) if v is not None}

    def int_of(self, conn: Connection, key: str, *, lock: bool = False) -> int | None:
        """A value read as a whole number (None when absent, empty or not a number)."""
        v = self.get(conn, key, lock=lock)
        try:
            return int(v) if v else None
        except ValueError:
            return None
