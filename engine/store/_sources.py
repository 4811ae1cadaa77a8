"""The phase sources table (`phasegate_sources`): the source text of each
phase by its code hash, so a drift can be shown as a diff of the code that
ran against the code that runs now. A store opened read-only before its
upgrade may lack it: then no source is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import insert, select
from sqlalchemy.engine import Connection

from ._database import Database
from .schema import sources


class Sources:
    """Reads and writes of the phase sources table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def known(self, conn: Connection, hashes: Sequence[str]) -> set[str]:
        """Which of these code hashes have their source stored."""
        if "phasegate_sources" not in self._db.tables or not hashes:
            return set()
        q = select(sources.c.code_hash).where(sources.c.code_hash.in_(list(hashes)))
        return {r[0] for r in conn.execute(q)}

    def add(self, conn: Connection, code_hash: str, text: str, at: float) -> None:
        """Store a phase's source under its code hash.

        Raises:
            IntegrityError: it is stored already.
        """
        conn.execute(insert(sources).values(code_hash=code_hash, source=text, created_at=at))

    def get(self, conn: Connection, hashes: Sequence[str]) -> dict[str, str]:
        """The stored source of each of these code hashes that has one."""
        if "phasegate_sources" not in self._db.tables or not hashes:
            return {}
        q = select(sources.c.code_hash, sources.c.source).where(sources.c.code_hash.in_(list(hashes)))
        return {r[0]: r[1] for r in conn.execute(q) if isinstance(r[1], str)}
