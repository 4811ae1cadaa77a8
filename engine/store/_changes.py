"""Whether another process changed the store: what a live view polls before
it reads again. It owns no table: SQLite answers from its file's
`PRAGMA data_version`, PostgreSQL from the notifications its triggers send
(`_postgres.ChangeFeed`).
"""

from __future__ import annotations

from typing import Protocol

from . import _postgres
from ._database import Database


class ChangeProbe(Protocol):
    """Answers whether another connection committed since the last call."""

    def changed(self) -> bool: ...

    def close(self) -> None: ...


class DataVersion:
    """One long-lived connection that answers "did another connection commit
    since I last asked?" via SQLite's `PRAGMA data_version`, which changes only
    when some other connection commits."""

    def __init__(self, db: Database) -> None:
        self._conn = db.sa.raw_connection()
        self._last: int | None = None

    def changed(self) -> bool:
        """Whether another connection committed since the last call (never on the first)."""
        cur = self._conn.cursor()
        try:
            cur.execute("PRAGMA data_version")
            row = cur.fetchone()
        finally:
            cur.close()
        value = int(row[0]) if row else 0
        changed = self._last is not None and value != self._last
        self._last = value
        return changed

    def close(self) -> None:
        """Close its connection."""
        self._conn.close()


class Changes:
    """Probes of the store's changes."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def probe(self) -> ChangeProbe:
        """A new probe, with a connection of its own; the caller closes it."""
        if self._db.is_sqlite:
            return DataVersion(self._db)
        return _postgres.ChangeFeed(self._db.target)
