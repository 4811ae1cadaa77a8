"""Everything PostgreSQL-specific, in one place: the driver (psycopg 3), URL
normalisation, hot transactions on the driver connection, change
notifications (LISTEN/NOTIFY from a trigger), and what the server's errors
mean to a person. The tables and queries are the same as SQLite's."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.engine import Engine as SAEngine

from ..errors import StoreError

try:  # psycopg is an optional extra: pip install '.[postgres]'
    import psycopg

    DriverError: type[BaseException] = psycopg.Error
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

    class DriverError(Exception):  # type: ignore[no-redef]
        pass


CHANNEL = "phasegate"
name = "postgresql"
row_locks = True
#: The hot transaction's lease check locks the run's row until commit, so a
#: takeover cannot slip between the check and the write it guards.
FENCE_LOCK = " FOR UPDATE"


def is_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def sa_url(target: str) -> str:
    return re.sub(r"^(postgresql|postgres)(\+psycopg)?://", "postgresql+psycopg://", target)


def conninfo(target: str) -> str:
    return re.sub(r"^(postgresql|postgres)(\+psycopg)?://", "postgresql://", target)


def redact(target: str) -> str:
    return re.sub(r"://([^:@/]+):[^@/]*@", r"://\1:***@", target)


def make_engine(target: str, *, readonly: bool) -> SAEngine:
    if psycopg is None:
        raise StoreError("PostgreSQL needs the psycopg driver: pip install 'phasegate[postgres]'")
    engine = create_engine(sa_url(target), pool_size=4, max_overflow=8, pool_pre_ping=True)
    if readonly:

        @event.listens_for(engine, "connect")
        def _ro(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SET default_transaction_read_only = on")
            dbapi_conn.commit()

    return engine


def hot_sql(sql: str) -> str:
    """The hot statements are written with :name parameters; psycopg wants %(name)s."""
    return re.sub(r":(\w+)", r"%(\1)s", sql)


def hot_begin(raw: Any, cur: Any) -> None:
    """psycopg opens a transaction implicitly with the first statement."""


def hot_commit(raw: Any, cur: Any) -> None:
    raw.commit()


def hot_rollback(raw: Any, cur: Any) -> None:
    raw.rollback()


def hot_read_done(raw: Any, cur: Any) -> None:
    """End the transaction psycopg opened for a lone SELECT."""
    raw.rollback()


_TRIGGER = [
    f"""CREATE OR REPLACE FUNCTION phasegate_notify() RETURNS trigger AS $$
    BEGIN
        PERFORM pg_notify('{CHANNEL}', NEW.run_id);
        RETURN NEW;
    END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS phasegate_runs_notify ON phasegate_runs",
    "CREATE TRIGGER phasegate_runs_notify AFTER INSERT OR UPDATE ON phasegate_runs "
    "FOR EACH ROW EXECUTE FUNCTION phasegate_notify()",
    "DROP TRIGGER IF EXISTS phasegate_decisions_notify ON phasegate_decisions",
    "CREATE TRIGGER phasegate_decisions_notify AFTER INSERT OR UPDATE ON phasegate_decisions "
    "FOR EACH ROW EXECUTE FUNCTION phasegate_notify()",
]


def after_create(conn: Connection) -> None:
    """Every commit that touches a run or a decision notifies listeners (the
    console), so a PostgreSQL store is followed live without polling."""
    for stmt in _TRIGGER:
        conn.exec_driver_sql(stmt)


class ChangeFeed:
    """LISTEN on one long-lived connection: `changed()` says whether any
    notification arrived since the last call."""

    def __init__(self, target: str) -> None:
        assert psycopg is not None
        self._conn = psycopg.connect(conninfo(target), autocommit=True)
        self._conn.execute(f"LISTEN {CHANNEL}")

    def changed(self) -> bool:
        return self.wait(0)

    def wait(self, timeout: float) -> bool:
        """Block up to `timeout` seconds for a notification; True if any came
        (all waiting ones are drained)."""
        got = False
        for _ in self._conn.notifies(timeout=timeout, stop_after=1):
            got = True
        if got:
            for _ in self._conn.notifies(timeout=0):
                pass
        return got

    def close(self) -> None:
        self._conn.close()


def explain(exc: BaseException, where: str) -> StoreError:
    msg = (
        str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(getattr(exc, "orig", exc)).strip() else repr(exc)
    )
    low = msg.lower()
    if "connection refused" in low or "could not connect" in low or "connection failed" in low:
        return StoreError(f"cannot connect to PostgreSQL at {where}: {msg}")
    if "does not exist" in low and "database" in low:
        return StoreError(f"PostgreSQL database does not exist ({where}): {msg}")
    if "read-only" in low or "read only" in low:
        return StoreError(f"database is read-only ({where}); phasegate needs to write to it")
    if "permission denied" in low:
        return StoreError(f"permission denied on {where}: {msg}")
    if "no space" in low or "disk full" in low:
        return StoreError(f"database is full ({where}): nothing was written")
    return StoreError(f"database error ({where}): {msg}")
