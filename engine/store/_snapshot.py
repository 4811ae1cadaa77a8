"""One consistent snapshot of the whole store, for a screen that shows many
tables' rows together (the console's runs page: the page, the counts, the
workers, the claims, the proposals).

SQLite already reads one snapshot per transaction: a deferred `BEGIN` in WAL
mode fixes it at the first read, and every later statement of the
transaction sees that state, whatever another process commits meanwhile.
PostgreSQL's default, READ COMMITTED, takes a new snapshot per statement:
the counts could then include a run the page does not, so the transaction
asks for REPEATABLE READ before its first statement. Read-only either way,
so it never waits on a writer, and a writer never waits on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection

from ._database import Database

#: PostgreSQL: one snapshot for the whole transaction, taken at its first query.
_PG_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


@contextmanager
def snapshot(db: Database) -> Iterator[Connection]:
    """A read transaction in which every statement sees the same state.

    Args:
        db: The open database.

    Yields:
        The transaction's connection.

    Raises:
        StoreError: The database failed or is damaged (`Database.read`).
    """
    with db.read() as conn:
        if not db.is_sqlite:
            conn.exec_driver_sql(_PG_SNAPSHOT)
        yield conn
