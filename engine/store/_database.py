"""The connection to a phasegate database, shared by every table's
repository: opening (and upgrading) it, each backend's dialect, the kinds of
transaction, the reused writer connection of the hot path, and the lease
clock. It owns the `phasegate_meta` table (the schema version) and no other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, inspect, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from ..errors import StoreError, StoreMissing
from ..history.keys import SealKey
from . import _postgres, _sqlite, migrations
from ._dialect import Dialect
from .schema import SCHEMA_VERSION, meta, metadata


def driver(conn: Connection) -> Any:
    """The sqlite3 connection under `conn`, in the transaction `conn` holds."""
    return conn.connection.driver_connection


#: The lease a store is opened for when its opener does not say (the engine does).
DEFAULT_LEASE_SECONDS = 30.0


def _looks_like_url(target: str) -> bool:
    return "://" in target


class Database:
    """A phasegate database: SQLite by path (the default) or a URL
    (sqlite:///PATH, postgresql://...), opened once and shared by the
    repositories of its tables."""

    def __init__(
        self,
        target: str | Path,
        *,
        create: bool = True,
        readonly: bool = False,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        held_key: SealKey | None = None,
    ) -> None:
        self._held_key = held_key
        """The key this process was given, for an upgrade that seals (`migrations.upgrade`)."""
        self.target = str(target)
        """What the store was opened by (a path or URL, as given)."""
        self.readonly = readonly
        self.path: Path | None = None
        """The SQLite file (None on PostgreSQL)."""
        self._held: tuple[int, int] | None = None
        #: Set when the stored schema is one this code does not know; the
        #: engine treats it as an integrity failure and writes nothing.
        self.schema_problem: str | None = None
        self.seal_key: SealKey | None = None
        """This store's seal key, set by `Store` (`Store.seal_key`): the
        repositories seal under it, and no other store's."""
        self.seal_problem: str | None = None
        """Set (by `Store`) when this process cannot seal as the store's seals
        are made: without the store's key, or with another; writes are refused."""
        create = create and not readonly
        fresh = False
        if _postgres.is_url(self.target):
            self.dialect: Dialect = _postgres
            self.where = _postgres.redact(self.target)
            if "@" in (_postgres.password(self.target) or ""):
                # The driver would cut the URL at the first "@" and print the rest of the password as a host.
                raise StoreError(f"the password in {self.where} holds '@': write it as %40")
            try:
                self.sa = _postgres.make_engine(
                    self.target, readonly=readonly, lock_ms=_sqlite.busy_timeout_ms(lease_seconds)
                )
            except (ValueError, SQLAlchemyError):
                # The message could quote the URL; `where` is the one safe to show.
                raise StoreError(f"not a usable PostgreSQL URL: {self.where}") from None
        elif _looks_like_url(self.target) and not self.target.startswith("sqlite:///"):
            raise StoreError(
                f"unsupported database URL {self.target.split('://')[0]}://; "
                "use a file path, sqlite:///PATH or postgresql://..."
            )
        else:
            self.dialect = _sqlite
            raw = self.target.removeprefix("sqlite:///")
            self.path = Path(raw).expanduser().absolute()
            self.where = str(self.path)
            fresh = _sqlite.check_path(self.path, create=create)
            # Held from before the first connection: another store of this
            # process must not read the header (and drop this one's locks) from now on.
            self._held = _sqlite.hold(self.path)
            self.sa = _sqlite.make_engine(self.path, readonly=readonly, busy_ms=_sqlite.busy_timeout_ms(lease_seconds))
        self.hot_lock = threading.Lock()
        """Held by whoever uses the reused writer connection (`hot_connection`)."""
        self._hot: Connection | None = None
        try:
            self._open(fresh=fresh, create=create)
        except (SQLAlchemyError, self.dialect.DriverError) as exc:
            self._abandon()
            raise self.explain(exc) from None
        except UnicodeDecodeError:
            self._abandon()
            raise self._not_utf8() from None
        except StoreError:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """The open failed: let go of everything it took."""
        self.sa.dispose()
        held, self._held = self._held, None
        _sqlite.release(held)

    @property
    def is_sqlite(self) -> bool:
        """Whether this is an SQLite store (else PostgreSQL)."""
        return self.dialect is _sqlite

    # -- opening --------------------------------------------------------------

    def _open(self, *, fresh: bool, create: bool) -> None:
        names = set(inspect(self.sa).get_table_names())
        #: Tables this store has; a read-only open of an older store may lack
        #: the ones added since (see `schema.ADDED_IN`).
        self.tables = set(names) | (set(metadata.tables) if "phasegate_meta" not in names else set())
        if "phasegate_meta" not in names:
            phasegate_tables = {n for n in names if n.startswith("phasegate_")}
            if self.is_sqlite and names:
                # A file someone else owns: never add our tables to it.
                shown = ", ".join(sorted(names)[:3])
                raise StoreError(f"{self.where} is an SQLite database but not a phasegate store (it has {shown})")
            if phasegate_tables:
                raise StoreError(f"{self.where} has phasegate tables but no schema version: a damaged store")
            if not create:
                raise StoreMissing(f"{self.where} holds no phasegate store yet")
            if self.is_sqlite:
                _sqlite.enable_wal(self.sa)
            with self.sa.connect() as conn:
                conn = conn.execution_options(phasegate_write=True)
                with conn.begin():
                    # Another process may have created the store while this
                    # one waited for the write lock: then there is nothing to do.
                    metadata.create_all(conn)
                    if conn.execute(select(meta.c.key).where(meta.c.key == "schema_version")).first() is None:
                        conn.execute(insert(meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
                        if not self.is_sqlite:
                            _postgres.after_create(conn)
            return
        with self.sa.connect() as conn:
            value = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
        try:
            version = int(value) if value is not None else None
        except ValueError:
            version = None
        if version is None:
            self.schema_problem = f"schema version {value!r} is not a number this engine understands"
        elif version > SCHEMA_VERSION:
            self.schema_problem = f"schema version {version} is newer than this engine knows ({SCHEMA_VERSION})"
        elif version < SCHEMA_VERSION and self.readonly:
            # Reading an older store would need every query to know every
            # older layout; one writable open upgrades it instead.
            raise StoreError(
                f"{self.where} is a phasegate store of format {version}, older than this engine's ({SCHEMA_VERSION}):"
                f" upgrade it once with `phasegate verify --db {self.where}`"
            )
        elif version < SCHEMA_VERSION:
            # Any writable open upgrades, not only one that may create a store:
            # `phasegate watch` or `status` on an older store must find its tables.
            self._migrate()
        if self.schema_problem is None and not self.readonly and not self.is_sqlite:
            with self.sa.connect() as conn:
                stale = not _postgres.notify_is_per_schema(conn)
            if stale:
                with self.write() as conn:
                    _postgres.upgrade_notify(conn)

    def _migrate(self) -> None:
        """Upgrade in code, in one transaction (store/migrations.py). The
        version row is locked first, so two processes upgrading at once do it
        one after the other."""
        with self.write() as conn:
            q = select(meta.c.value).where(meta.c.key == "schema_version")
            if self.dialect.row_locks:
                q = q.with_for_update()
            version = int(conn.execute(q).scalar() or SCHEMA_VERSION)
            if version >= SCHEMA_VERSION:
                return  # another process upgraded while this one waited
            added = migrations.upgrade(conn, version, self._held_key)
            conn.execute(update(meta).where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
        self.tables |= added

    def close(self) -> None:
        """Close the reused connection and the pool, and let go of the file."""
        with self.hot_lock:
            if self._hot is not None:
                self._hot.close()
                self._hot = None
        self.sa.dispose()
        held, self._held = self._held, None
        _sqlite.release(held)

    def explain(self, exc: BaseException) -> StoreError:
        """The store's own error for a driver's, safe to show (no password)."""
        err = self.dialect.explain(exc, self.where)
        if self.dialect is _postgres:
            err.message = _postgres.scrub(err.message, self.target)
            err.args = (err.message,)
        return err

    # -- transactions ---------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction on a pooled connection.

        Raises:
            StoreError: the database failed or is damaged.
        """
        try:
            with self.sa.connect() as conn, conn.begin():
                yield conn
        except IntegrityError:
            raise  # a constraint broken by our own code is a bug, not a user's problem
        except DBAPIError as exc:
            raise self.explain(exc) from None
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    @contextmanager
    def scan(self) -> Iterator[Connection]:
        """A connection for a long read over many runs (a verify), on which
        `read_on` opens one read transaction after another: on SQLite its
        file is mapped into memory while it is held (`_sqlite.scan_begin`)."""
        try:
            with self.sa.connect() as conn:
                raw = conn.connection.driver_connection
                self.dialect.scan_begin(raw)
                try:
                    yield conn
                finally:
                    if not conn.invalidated:
                        try:
                            self.dialect.scan_end(raw)
                        except self.dialect.DriverError:
                            pass  # a broken connection: the error that broke it is the one to tell
        except (DBAPIError, self.dialect.DriverError) as exc:
            raise self.explain(exc) from None
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    @contextmanager
    def read_on(self, conn: Connection) -> Iterator[Connection]:
        """A read transaction on a `scan` connection, with `read`'s errors."""
        try:
            with conn.begin():
                yield conn
        except IntegrityError:
            raise
        except (DBAPIError, self.dialect.DriverError) as exc:
            # The chains are read through the driver itself (`live_chains`).
            raise self.explain(exc) from None
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    def _not_utf8(self) -> StoreError:
        # The driver decodes text as it reads it: a damaged page can hold bytes
        # that are not UTF-8, which it reports as a Python error, not its own.
        return StoreError(f"database is damaged ({self.where}): stored text is not UTF-8")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction that holds the write lock from its first
        statement, on a fresh pooled connection (safe from any thread)."""
        if self.readonly:
            raise StoreError("the store is open read-only")
        if self.schema_problem:
            # A store this code cannot interpret is evidence: nothing may change it.
            raise StoreError(f"{self.schema_problem}; nothing was written")
        if self.seal_problem:
            # A write sealed otherwise than the store's seals would read as damage.
            raise StoreError(f"{self.seal_problem}; nothing was written")
        try:
            with self.sa.connect() as conn:
                conn = conn.execution_options(phasegate_write=True)
                with conn.begin():
                    yield conn
        except IntegrityError:
            raise  # a constraint broken by our own code is a bug, not a user's problem
        except DBAPIError as exc:
            raise self.explain(exc) from None
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    def hot_connection(self) -> Connection:
        """The reused writer connection (callers hold `hot_lock`)."""
        if self.readonly:
            raise StoreError("the store is open read-only")
        if self.schema_problem:
            # A store this code cannot interpret is evidence: nothing may change it.
            raise StoreError(f"{self.schema_problem}; nothing was written")
        if self.seal_problem:
            # A write sealed otherwise than the store's seals would read as damage.
            raise StoreError(f"{self.seal_problem}; nothing was written")
        if self._hot is None or self._hot.closed or self._hot.invalidated:
            self._hot = self.sa.connect().execution_options(phasegate_write=True)
        return self._hot

    def drop_hot(self, raw: Any = None, *, invalidated: bool = False) -> None:
        """After a driver error: if the reused connection is gone (a server
        restart, a failover, `pg_terminate_backend`), throw it away, so the
        next use opens a new one instead of failing for ever (callers hold
        `hot_lock`)."""
        if self._hot is None or not (invalidated or self.dialect.disconnected(raw)):
            return
        hot, self._hot = self._hot, None
        try:
            hot.invalidate()
        except Exception:  # noqa: BLE001 - it is broken; we only let go of it
            pass

    @contextmanager
    def hot(self) -> Iterator[Connection]:
        """The reused connection of the checkpoint path: no pool checkout, no
        new connection per boundary. One thread at a time."""
        with self.hot_lock:
            conn = self.hot_connection()
            try:
                with conn.begin():
                    yield conn
            except DBAPIError as exc:
                raw = conn.connection.dbapi_connection if not conn.invalidated else None
                self.drop_hot(raw, invalidated=exc.connection_invalidated or conn.invalidated)
                raise self.explain(exc) from None

    @contextmanager
    def alone(self) -> Iterator[Any]:
        """A cursor on the reused connection for one statement that is its
        own transaction (the dialect's `alone_begin`)."""
        with self.hot_lock:
            raw = self.hot_connection().connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()
            try:
                self.dialect.alone_begin(raw, cur)
                try:
                    yield cur
                finally:
                    self.dialect.alone_end(raw, cur)
            except self.dialect.DriverError as exc:
                self.drop_hot(raw)
                raise self.explain(exc) from None
            finally:
                cur.close()

    # -- the lease ------------------------------------------------------------
    # Lease times come from one clock for every process that shares the store:
    # SQLite's processes share this host's clock; on PostgreSQL, processes on
    # several hosts share the server's (`clock_timestamp()`), never their own.

    def lease_now(self, host_now: float) -> Any:
        """The lease clock's "now" as an SQL expression (or the host's time)."""
        if self.is_sqlite:
            return host_now
        return func.extract("epoch", func.clock_timestamp())

    def lease_clock(self, conn: Connection, host_now: float) -> float:
        """The lease clock's "now", read on `conn` (the server's on PostgreSQL)."""
        if self.is_sqlite:
            return host_now
        return float(conn.execute(select(self.lease_now(host_now))).scalar_one())
