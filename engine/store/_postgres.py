"""Everything PostgreSQL-specific, in one place: the driver (psycopg 3), URL
normalisation, hot transactions on the driver connection, change
notifications (LISTEN/NOTIFY from a trigger), and what the server's errors
mean to a person. The tables and queries are the same as SQLite's."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.engine import Engine as SAEngine

from ..errors import ConnectionLost, StoreError

# psycopg is imported when a PostgreSQL store is opened, not with this module:
# a command on a SQLite store does not pay for it (about a fifth of a start).


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # psycopg is an optional extra: pip install '.[postgres]'
        raise StoreError("PostgreSQL needs the psycopg driver: pip install 'phasegate[postgres]'") from None
    return psycopg


class _NoDriver(Exception):
    """Stands for psycopg's errors where psycopg is not installed: nothing raises it."""


if TYPE_CHECKING:
    #: The driver's error base class (psycopg's, once a PostgreSQL store is opened).
    DriverError: type[Exception]


def __getattr__(name: str) -> Any:
    # `DriverError` is only asked for by a store that opened PostgreSQL, so
    # the driver is imported by then.
    if name == "DriverError":
        try:
            import psycopg
        except ImportError:
            return _NoDriver
        return psycopg.Error
    raise AttributeError(name)


name = "postgresql"
row_locks = True
#: The hot transaction's lease check locks the run's row until commit, so a
#: takeover cannot slip between the check and the write it guards.
FENCE_LOCK = " FOR UPDATE"
#: A checkpoint as one statement (_hotpath.py `_CHECKPOINT_ADVANCE`): a round trip a boundary.
CHECKPOINT_IN_ONE = True


#: The lease clock in SQL: the server's, shared by every host.
LEASE_NOW_SQL = "EXTRACT(EPOCH FROM clock_timestamp())"


def disconnected(raw: Any) -> bool:
    """Whether the driver connection is gone (closed by the server or broken)."""
    return raw is None or bool(getattr(raw, "closed", False) or getattr(raw, "broken", False))


def is_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://", "postgresql+psycopg://"))


def sa_url(target: str) -> str:
    return re.sub(r"^(postgresql|postgres)(\+psycopg)?://", "postgresql+psycopg://", target)


def conninfo(target: str) -> str:
    return re.sub(r"^(postgresql|postgres)(\+psycopg)?://", "postgresql://", target)


def _userinfo(target: str) -> tuple[int, int] | None:
    """Where the user info (`user:password`) of a URL is: from after "://"
    to its last "@" before any "?" or "#". The last, not the first: a
    password may hold "@" (and "/"), and cutting at the first would show the
    rest of it."""
    start = target.find("://")
    if start < 0:
        return None
    start += 3
    end = len(target)
    for ch in "?#":
        i = target.find(ch, start)
        if i >= 0:
            end = min(end, i)
    at = target.rfind("@", start, end)
    return None if at < 0 else (start, at)


#: libpq also takes the password as a query parameter.
_QUERY_PASSWORD = re.compile(r"([?&]password=)([^&#]*)")


def password(target: str) -> str | None:
    """The password in a URL, as written (None when there is none)."""
    span = _userinfo(target)
    if span is not None:
        _user, sep, pw = target[span[0] : span[1]].partition(":")
        if sep and pw:
            return pw
    m = _QUERY_PASSWORD.search(target)
    return m.group(2) if m and m.group(2) else None


def redact(target: str) -> str:
    """The URL fit for a message: its password shown as `***`, whole, in the
    user info or as a query parameter."""
    target = _QUERY_PASSWORD.sub(r"\1***", target)
    span = _userinfo(target)
    if span is None:
        return target
    user, sep, _pw = target[span[0] : span[1]].partition(":")
    if not sep:
        return target
    return f"{target[: span[0]]}{user}:***{target[span[1] :]}"


def scrub(message: str, target: str) -> str:
    """A driver's message with the URL's password hidden, should the driver
    have echoed it (as written, or percent-decoded)."""
    from urllib.parse import unquote

    pw = password(target)
    if not pw:
        return message
    for form in sorted({pw, unquote(pw)}, key=len, reverse=True):
        if len(form) >= 3:  # a shorter one would mask ordinary words too
            message = message.replace(form, "***")
    return message


def make_engine(target: str, *, readonly: bool, lock_ms: int) -> SAEngine:
    _psycopg()
    engine = create_engine(sa_url(target), pool_size=4, max_overflow=8, pool_pre_ping=True)

    @event.listens_for(engine, "connect")
    def _lock_timeout(dbapi_conn: Any, _record: Any) -> None:
        # A row lock held by a frozen holder (SIGSTOP inside its commit, a
        # paused VM) would keep every other writer waiting without bound: a
        # decision, a takeover, a heartbeat. Give up as SQLite's busy timeout
        # does (`_sqlite.busy_timeout_ms`: a third of the lease), with one line.
        with dbapi_conn.cursor() as cur:
            cur.execute(f"SET lock_timeout = {int(lock_ms)}")
        dbapi_conn.commit()

    if readonly:

        @event.listens_for(engine, "connect")
        def _ro(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SET default_transaction_read_only = on")
            dbapi_conn.commit()

    return engine


def scan_begin(raw: Any) -> None:
    """A long read needs nothing set on a server connection (SQLite maps its file)."""


def scan_end(raw: Any) -> None:
    """Nothing was set by `scan_begin`."""


def hot_sql(sql: str) -> str:
    """The hot statements are written with :name parameters; psycopg wants %(name)s."""
    return re.sub(r":(\w+)", r"%(\1)s", sql)


def hot_begin(raw: Any, cur: Any) -> None:
    """psycopg opens a transaction implicitly with the first statement."""


def hot_commit(raw: Any, cur: Any) -> None:
    raw.commit()


def hot_rollback(raw: Any, cur: Any) -> None:
    raw.rollback()


def alone_begin(raw: Any, cur: Any) -> None:
    """A lone statement runs in autocommit: the server commits it as it ends,
    one round trip where BEGIN, the statement and COMMIT (or ROLLBACK) are
    three. Never a ROLLBACK on this connection in the normal course: psycopg
    forgets its prepared statements at every rollback (and sends DEALLOCATE
    ALL), so the checkpoint's statement would be parsed afresh each time."""
    raw.autocommit = True


def alone_end(raw: Any, cur: Any) -> None:
    # Back to explicit transactions before anything else uses the connection:
    # the hot transactions, SQLAlchemy's own and the pool rely on it.
    if not disconnected(raw):
        raw.autocommit = False


_TRIGGER = [
    # The channel is the schema's own: one database may hold several stores.
    """CREATE OR REPLACE FUNCTION phasegate_notify() RETURNS trigger AS $$
    BEGIN
        PERFORM pg_notify('phasegate_' || left(md5(TG_TABLE_SCHEMA), 16), NEW.run_id);
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


def channel(schema: str) -> str:
    """The LISTEN channel of the store in `schema` (an identifier of hex
    digits, short enough whatever the schema is called)."""
    return "phasegate_" + hashlib.md5(schema.encode()).hexdigest()[:16]


def notify_is_per_schema(conn: Connection) -> bool:
    """Whether the store's notify function uses the schema's own channel
    (stores created before it used one channel for the whole database)."""
    src = conn.exec_driver_sql(
        "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE p.proname = 'phasegate_notify' AND n.nspname = current_schema()"
    ).scalar()
    return src is None or "TG_TABLE_SCHEMA" in str(src)


def upgrade_notify(conn: Connection) -> None:
    conn.exec_driver_sql(_TRIGGER[0])


class ChangeFeed:
    """LISTEN on one long-lived connection: `changed()` says whether any
    notification arrived since the last call."""

    def __init__(self, target: str) -> None:
        self._conn = _psycopg().connect(conninfo(target), autocommit=True)
        row = self._conn.execute("SELECT current_schema()").fetchone()
        self._conn.execute(f"LISTEN {channel(str(row[0]) if row else 'public')}")

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


def explain(exc: BaseException, where: str | Path | None) -> StoreError:
    """One clear line for a server's or driver's error (`where`: the store, safe to show)."""
    msg = (
        str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(getattr(exc, "orig", exc)).strip() else repr(exc)
    )
    low = msg.lower()
    if any(
        m in low
        for m in (
            "terminating connection",
            "server closed the connection",
            "consuming input failed",
            "connection is closed",
            "connection already closed",
            "the connection is lost",
        )
    ):
        return ConnectionLost(f"lost the connection to PostgreSQL at {where}: {msg}; nothing more was written")
    if "lock timeout" in low:
        return StoreError(
            f"the store is locked ({where}): another process holds a row this needs (a frozen or stalled"
            " holder: `phasegate status RUN` names it); nothing was written, try again"
        )
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
