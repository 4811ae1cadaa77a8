"""Everything SQLite-specific, in one place: opening a path safely, the
connection pragmas, write transactions that take the lock up front, and what
SQLite's errors mean to a person. A PostgreSQL backend gets its own module."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine as SAEngine
from sqlalchemy.pool import QueuePool

from ..errors import StoreError, StoreMissing

_HEADER = b"SQLite format 3\x00"

#: The driver's error base class, for errors raised outside SQLAlchemy.
DriverError = sqlite3.Error
name = "sqlite"
#: SQLite serialises writers with BEGIN IMMEDIATE; it has no row locks.
row_locks = False
#: The hot transaction's lease check needs no lock of its own: BEGIN
#: IMMEDIATE already keeps every other writer out until commit.
FENCE_LOCK = ""
#: A checkpoint as one statement (_hotpath.py `_CHECKPOINT_ADVANCE`): no round trips to save in-process.
CHECKPOINT_IN_ONE = False


#: The lease clock in SQL: the host's time, passed in as `:now`.
LEASE_NOW_SQL = ":now"


def disconnected(raw: Any) -> bool:
    """A file does not disconnect."""
    return False


def hot_sql(sql: str) -> str:
    """SQLite takes the hot statements' `:name` parameters as written."""
    return sql


def hot_begin(raw: Any, cur: Any) -> None:
    # Take the write lock up front so the transaction never fails half-way.
    cur.execute("BEGIN IMMEDIATE")


def hot_commit(raw: Any, cur: Any) -> None:
    cur.execute("COMMIT")


def hot_rollback(raw: Any, cur: Any) -> None:
    cur.execute("ROLLBACK")


def alone_begin(raw: Any, cur: Any) -> None:
    """The hot connection runs in autocommit between its explicit
    transactions: a lone statement is a transaction of its own already."""


def alone_end(raw: Any, cur: Any) -> None:
    """Nothing to restore (`alone_begin`)."""


def scan_begin(raw: Any) -> None:
    """Before a long read of many rows (a verify): nothing; the file is read,
    not mapped into memory.

    Mapping it was 10-20% faster (bench/RESULTS.md, verify-fast), but a
    mapped file cut short by another process (a `truncate`, a restore tool, a
    damaged disk) turns the next read past its new end into SIGBUS: the verify
    dies without a word, the one command that should say the file is damaged.
    Read through the driver, the same cut is an I/O error, reported in one
    line. Nothing tells a verify that no other process will touch the file,
    so it never maps it (#29)."""


def scan_end(raw: Any) -> None:
    """Nothing was set by `scan_begin`."""


def stored_text(column: str) -> str:
    """A text column read as its stored UTF-8 bytes (hashed as they are,
    with no decode and no encode back); a value that is not text comes back
    as the name of its type, which the row check reports as damage."""
    return (
        f"CASE WHEN typeof({column}) IN ('text', 'null') THEN CAST({column} AS BLOB) ELSE typeof({column}) END"
        f" AS {column}"
    )


def busy_timeout_ms(lease_seconds: float) -> int:
    """How long a writer waits for another writer's lock before giving up: a
    third of the lease, at most 60 s. Shorter than the lease on purpose: a
    heartbeat stuck behind one frozen writer must give up and try again
    within the lease, and no write waits so long that its own lease lapses
    while it waits."""
    ms = lease_seconds * 1000 / 3 if lease_seconds > 0 else 60_000
    return int(min(max(ms, 50), 60_000))


def check_path(path: Path, *, create: bool) -> bool:
    """Validate `path` before SQLite touches it. Returns True when the store is
    new (created here, mode 0600, or an existing empty file).

    Raises:
        StoreError: It is no database file, cannot be created, or this account
            may not look at it (one line, never a traceback).
    """
    try:
        return _check_path(path, create=create)
    except PermissionError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror} (this account may not use this store)") from None


def _check_path(path: Path, *, create: bool) -> bool:
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file")
    if path.exists() and not path.is_file():
        # A FIFO would block the open for ever; a device or socket is no store either.
        raise StoreError(f"{path} is not a regular file (a FIFO, socket or device), so not a database file")
    if not path.exists():
        if not create:
            raise StoreMissing(f"no phasegate database at {path}")
        if not path.parent.exists():
            raise StoreError(f"folder {path.parent} does not exist")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot create {path}: {exc.strerror}") from None
        os.close(fd)
        return True
    # Closing any descriptor of a file drops every POSIX lock this process
    # holds on it, including the SQLite locks of connections already open
    # here (another Store on the same file, in another thread). Another
    # process may then think it holds the last connection and delete the WAL
    # under them ("disk I/O error"). So the header is not read again while
    # a store of this process holds the file open. Only then: a file deleted
    # after its store closed frees its inode, and a new file (not a database)
    # may get the same one.
    try:
        st = path.stat()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if st.st_size > 0 and _held.get((st.st_dev, st.st_ino)):
        return False
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_HEADER))
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if not head:
        return True
    if head != _HEADER:
        raise StoreError(f"{path} is not an SQLite database")
    return False


#: Files (device, inode) that open stores of this process hold, and how many hold each.
_held: dict[tuple[int, int], int] = {}


def hold(path: Path) -> tuple[int, int] | None:
    """A store opened `path`: its header is not read again until `release`."""
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_dev, st.st_ino)
    _held[key] = _held.get(key, 0) + 1
    return key


def release(key: tuple[int, int] | None) -> None:
    if key is not None and key in _held:
        _held[key] -= 1
        if _held[key] <= 0:
            del _held[key]


def make_engine(path: Path, *, readonly: bool, busy_ms: int = 60_000) -> SAEngine:
    if readonly:
        # Opened read-only at the file level, not only `query_only`: the
        # last connection of a process closing checkpoints the WAL into the
        # database file, unless it cannot write. A read-only open (the
        # console's) must leave every byte of a store as it found it.
        url = f"sqlite:///file:{quote(str(path))}?mode=ro&uri=true"
    else:
        url = f"sqlite:///{path}"
    engine = create_engine(url, poolclass=QueuePool, pool_size=4, max_overflow=8)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # Take transaction control from the driver: we say BEGIN ourselves so
        # that writes can take the lock up front (BEGIN IMMEDIATE) and never
        # fail half-way on a lock upgrade.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        cur.execute("PRAGMA synchronous=FULL")
        if readonly:
            cur.execute("PRAGMA query_only=1")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        write = conn.get_execution_options().get("phasegate_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def enable_wal(engine: SAEngine, *, patience: float = 30.0) -> None:
    """Switch a new store to WAL, outside any transaction (the journal mode
    cannot change inside one). Several processes may create the same store at
    once; changing the mode takes a lock SQLite's busy handler does not wait
    for, so a locked answer is retried, and a store already in WAL is left as is."""
    deadline = time.monotonic() + patience
    while True:
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            mode = cur.execute("PRAGMA journal_mode").fetchone()
            if mode and str(mode[0]).lower() == "wal":
                return
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
        finally:
            raw.close()
        time.sleep(0.05)


def explain(exc: BaseException, path: str | Path | None) -> StoreError:
    """One clear line for a driver error."""
    msg = str(getattr(exc, "orig", exc))
    where = f" ({path})" if path else ""
    low = msg.lower()
    if "not a database" in low or "malformed" in low:
        return StoreError(f"database is damaged or not a database{where}: {msg}")
    if "readonly" in low or "read-only" in low:
        return StoreError(f"database is read-only{where}; phasegate needs to write to it")
    if "unable to open" in low:
        return StoreError(f"cannot open database{where}: check the file and folder permissions")
    if "disk is full" in low or "database or disk is full" in low:
        return StoreError(f"database is full{where}: nothing was written")
    if "database is locked" in low or "database table is locked" in low or "database is busy" in low:
        return StoreError(f"database stayed locked by another process{where}: try again")
    if "disk i/o" in low:
        return StoreError(f"disk I/O error{where}: {msg}")
    return StoreError(f"database error{where}: {msg}")
