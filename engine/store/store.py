"""The store: every read and write the engine makes, and nothing else.

Reads of a run touch only that run's rows, through indexes keyed by run id,
so a resume costs the same with ten other runs or a hundred thousand.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from sqlalchemy import and_, case, delete, func, insert, inspect, or_, select, update
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from ..errors import StoreError
from . import _paging, _postgres, _rawread, _rowcheck, _sqlite, migrations, runorder
from .schema import (
    SCHEMA_VERSION,
    alerts,
    checkpoints,
    claims,
    decisions,
    effects,
    meta,
    metadata,
    policy,
    runs,
    sources,
    steps,
    workers,
)

_RUNS = _rawread.Reader(runs)
_EFFECTS = _rawread.Reader(effects)


def _driver(conn: Connection) -> Any:
    """The sqlite3 connection under `conn`, in the transaction `conn` holds."""
    return conn.connection.driver_connection


#: The lease a store is opened for when its opener does not say (the engine does).
DEFAULT_LEASE_SECONDS = 30.0


def _looks_like_url(target: str) -> bool:
    return "://" in target


class Store:
    """A phasegate database: SQLite by path (the default) or a URL
    (sqlite:///PATH, postgresql://...)."""

    def __init__(
        self,
        target: str | Path,
        *,
        create: bool = True,
        readonly: bool = False,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self.target = str(target)
        self.readonly = readonly
        self.path: Path | None = None
        self._held: tuple[int, int] | None = None
        #: Set when the stored schema is one this code does not know; the
        #: engine treats it as an integrity failure and writes nothing.
        self.schema_problem: str | None = None
        create = create and not readonly
        fresh = False
        if _postgres.is_url(self.target):
            self.dialect: Any = _postgres
            self.where = _postgres.redact(self.target)
            if "@" in (_postgres.password(self.target) or ""):
                # The driver would cut the URL at the first "@" and print the rest of the password as a host.
                raise StoreError(f"the password in {self.where} holds '@': write it as %40")
            try:
                self.sa = _postgres.make_engine(self.target, readonly=readonly)
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
        self._hot_sql = {
            k: self.dialect.hot_sql(v.replace(":lease_now", self.dialect.LEASE_NOW_SQL))
            for k, v in self._HOT_SQL.items()
        }
        self._hot_sql["fence"] += self.dialect.FENCE_LOCK
        #: Whether a checkpoint is one statement (`checkpoint_advance`): a
        #: round trip saved per boundary where statements cross a network.
        self.checkpoint_in_one = self.dialect.CHECKPOINT_IN_ONE
        if self.checkpoint_in_one:
            self._hot_sql["checkpoint_advance"] = self.dialect.hot_sql(
                self._CHECKPOINT_ADVANCE.replace(":lease_now", self.dialect.LEASE_NOW_SQL)
            )
        self._hot_lock = threading.Lock()
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
                raise StoreError(f"{self.where} holds no phasegate store yet")
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
            added = migrations.upgrade(conn, version)
            conn.execute(update(meta).where(meta.c.key == "schema_version").values(value=str(SCHEMA_VERSION)))
        self.tables |= added

    def close(self) -> None:
        with self._hot_lock:
            if self._hot is not None:
                self._hot.close()
                self._hot = None
        self.sa.dispose()
        held, self._held = self._held, None
        _sqlite.release(held)

    def explain(self, exc: BaseException) -> StoreError:
        err: StoreError = self.dialect.explain(exc, self.where)
        if self.dialect is _postgres:
            err.message = _postgres.scrub(err.message, self.target)
            err.args = (err.message,)
        return err

    # -- transactions ---------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
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

    def _hot_connection(self) -> Connection:
        """The reused writer connection (callers hold `_hot_lock`)."""
        if self.readonly:
            raise StoreError("the store is open read-only")
        if self.schema_problem:
            # A store this code cannot interpret is evidence: nothing may change it.
            raise StoreError(f"{self.schema_problem}; nothing was written")
        if self._hot is None or self._hot.closed or self._hot.invalidated:
            self._hot = self.sa.connect().execution_options(phasegate_write=True)
        return self._hot

    def _drop_hot(self, raw: Any = None, *, invalidated: bool = False) -> None:
        """After a driver error: if the reused connection is gone (a server
        restart, a failover, `pg_terminate_backend`), throw it away, so the
        next use opens a new one instead of failing for ever (callers hold
        `_hot_lock`)."""
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
        with self._hot_lock:
            conn = self._hot_connection()
            try:
                with conn.begin():
                    yield conn
            except DBAPIError as exc:
                raw = conn.connection.dbapi_connection if not conn.invalidated else None
                self._drop_hot(raw, invalidated=exc.connection_invalidated or conn.invalidated)
                raise self.explain(exc) from None

    # -- runs -----------------------------------------------------------------

    def get_run(
        self, conn: Connection, run_id: str, *, lock: bool = False, skip_locked: bool = False
    ) -> Row[Any] | None:
        """The run's row; with `lock`, held (FOR UPDATE) until the transaction
        ends where the backend has row locks (SQLite's BEGIN IMMEDIATE already
        serialises writers)."""
        q = select(runs).where(runs.c.run_id == run_id)
        if lock and self.dialect.row_locks:
            q = q.with_for_update(skip_locked=skip_locked)
        return _rowcheck.check(conn.execute(q).first())

    def insert_run(self, conn: Connection, values: dict[str, Any]) -> None:
        values = {"attention_rank": runorder.stored_rank(str(values.get("status")), False), **values}
        conn.execute(insert(runs).values(**values))

    def update_run(
        self,
        conn: Connection,
        run_id: str,
        values: dict[str, Any],
        *,
        owner: str | None = None,
        held_at: float | None = None,
    ) -> int:
        """With `owner`, only while that owner holds the lease; with `held_at`
        too, only while the lease is unexpired at that time (a fenced write)."""
        cond = runs.c.run_id == run_id
        if owner is not None:
            cond = and_(cond, runs.c.lease_owner == owner)
        if held_at is not None:
            cond = and_(cond, runs.c.lease_expires_at > self._lease_now(held_at))
        if "status" in values:
            # The stored attention rank follows the status in the same write.
            values = {**values, "attention_rank": _paging.rank_for(str(values["status"]))}
        return conn.execute(update(runs).where(cond).values(**values)).rowcount

    def update_runs(self, conn: Connection, run_ids: Sequence[str], values: dict[str, Any]) -> int:
        """The same change to several runs' rows, in one statement (never their status)."""
        assert "status" not in values, "a status change moves the attention rank: update_run"
        return conn.execute(update(runs).where(runs.c.run_id.in_(list(run_ids))).values(**values)).rowcount

    def _rerank_many(self, conn: Connection, run_ids: Sequence[str]) -> None:
        conn.execute(update(runs).where(runs.c.run_id.in_(list(run_ids))).values(attention_rank=_paging.rank_sql()))

    def _rerank(self, conn: Connection, run_id: Any) -> None:
        """Its decisions changed: the run's stored attention rank may have."""
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(attention_rank=_paging.rank_sql()))

    # -- the lease ------------------------------------------------------------
    # Lease times come from one clock for every process that shares the store:
    # SQLite's processes share this host's clock; on PostgreSQL, processes on
    # several hosts share the server's (`clock_timestamp()`), never their own.

    def _lease_now(self, host_now: float) -> Any:
        """The lease clock's "now" as an SQL expression (or the host's time)."""
        if self.is_sqlite:
            return host_now
        return func.extract("epoch", func.clock_timestamp())

    def lease_clock(self, conn: Connection, host_now: float) -> float:
        """The lease clock's "now", read on `conn` (the server's on PostgreSQL)."""
        if self.is_sqlite:
            return host_now
        return float(conn.execute(select(self._lease_now(host_now))).scalar_one())

    def touch_fenced(self, conn: Connection, run_id: str, owner: str, now: float) -> int:
        """Mark the run changed, only while `owner` holds an unexpired lease."""
        return self.update_run(conn, run_id, {"updated_at": now}, owner=owner, held_at=now)

    def extend_lease(self, run_id: str, owner: str, now: float, ttl: float) -> int:
        """A heartbeat: push the expiry on, only while the lease is still
        `owner`'s and unexpired. 0 means it is lost (expired or revoked)."""
        with self.write() as conn:
            now = self.lease_clock(conn, now)
            return self.update_run(
                conn,
                run_id,
                {"lease_expires_at": now + ttl, "heartbeat_at": now},
                owner=owner,
                held_at=now,
            )

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give up `owner`'s lease (expired or not); nothing if it is another's."""
        with self.write() as conn:
            self.update_run(conn, run_id, dict(LEASE_CLEARED), owner=owner)

    def revoke_lease(self, conn: Connection, run_id: str) -> None:
        """Clear whoever's lease it is, in the caller's transaction (a
        decision): every fenced write of the old holder then fails."""
        self.update_run(conn, run_id, dict(LEASE_CLEARED))

    def lease_held(self, run_id: str, owner: str, now: float) -> bool:
        """Whether `owner` holds an unexpired lease now: one read on the
        reused connection, a transaction of its own (the check right before
        an effect's call or a phase)."""
        with self._alone() as cur:
            cur.execute(self._hot_sql["held"], {"run_id": run_id, "owner": owner, "now": now})
            return cur.fetchone() is not None

    def hot_alone(self, name: str, params: dict[str, Any]) -> int:
        """One hot statement as a transaction of its own, committed as it
        ends (PostgreSQL: one round trip instead of BEGIN, it and COMMIT).
        Returns its row count: 0 from a fenced statement means the lease is gone."""
        with self._alone() as cur:
            cur.execute(self._hot_sql[name], params)
            return int(cur.rowcount)

    @contextmanager
    def _alone(self) -> Iterator[Any]:
        """A cursor on the reused connection for one statement that is its
        own transaction (the dialect's `alone_begin`)."""
        with self._hot_lock:
            raw = self._hot_connection().connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()
            try:
                self.dialect.alone_begin(raw, cur)
                try:
                    yield cur
                finally:
                    self.dialect.alone_end(raw, cur)
            except self.dialect.DriverError as exc:
                self._drop_hot(raw)
                raise self.explain(exc) from None
            finally:
                cur.close()

    def list_runs(
        self,
        conn: Connection,
        *,
        statuses: Sequence[str] | None = None,
        order: str = "run_id",
    ) -> list[Row[Any]]:
        """Every run row with these stored statuses, in a column's order (no
        attention rank: `page_runs` reads the operator's list)."""
        q = self._filtered(select(runs), statuses, None)
        o = runorder.Order.parse(order if order.lstrip("-") != "attention" else "run_id")
        return _paging.keyset(conn, q, o, after=None, inclusive=False, backward=False, limit=None)

    def _filtered(self, q: Any, statuses: Sequence[str] | None, text: str | None) -> Any:
        if statuses:
            q = q.where(runs.c.status.in_(list(statuses)))
        if text:
            like = f"%{text}%"
            q = q.where(or_(runs.c.run_id.like(like), runs.c.workflow.like(like), runs.c.attention.like(like)))
        return q

    def running_candidates(self, conn: Connection, now: float, host: str) -> list[Row[Any]]:
        """The running runs whose holder may be gone: a lease lapsed or no
        one's, or held from `host` (whose pid the caller can ask about). Live
        runs held from other hosts are not read."""
        q = select(runs).where(runs.c.status == "running", or_(_paging.gone_sql(now), runs.c.lease_host == host))
        return list(conn.execute(q))

    def page_runs(
        self,
        conn: Connection,
        *,
        limit: int | None,
        order: str = "attention",
        statuses: Sequence[str] | None = None,
        text: str | None = None,
        now: float = 0.0,
        dead: Sequence[str] = (),
        after: Sequence[Any] | None = None,
        inclusive: bool = False,
        backward: bool = False,
    ) -> list[tuple[Row[Any], tuple[Any, ...]]]:
        """A page of the runs list by keyset (store/_paging.py): the rows
        after the key `after` in `order` (before it with `backward`), each with
        its key and `pending_decision`, in the list's order. `dead`: running
        runs whose holder on this host is known dead, interrupted before
        their lease lapses."""
        o = runorder.Order.parse(order)
        pending = _paging.pending_exists()
        base = self._filtered(select(runs, pending.label("pending_decision")), statuses, text)
        n = limit if limit is not None else -1
        if o.name != "attention":
            got = _paging.keyset(conn, base, o, after=after, inclusive=inclusive, backward=backward, limit=limit)
            rows = [(r, o.key_of(r)) for r in got]
        else:
            gone = and_(runs.c.status == "running", or_(_paging.gone_sql(now), runs.c.run_id.in_(list(dead))))
            # Interrupted runs sit where their rank says, not where their
            # stored (live) rank does: read apart through the lease index,
            # the rest from the rank index, and merged.
            lost = [
                (r, o.key_of(r, runorder.interrupted_rank(bool(r.pending_decision))))
                for r in conn.execute(base.where(gone))
            ]
            got = _paging.keyset(
                conn, base.where(~gone), o, after=after, inclusive=inclusive, backward=backward, limit=limit
            )
            rows = [(r, o.key_of(r)) for r in got]
            if lost:
                rows += runorder.beyond(o, lost, after, inclusive=inclusive, backward=backward)
                rows.sort(key=lambda rk: o.sort_tuple(rk[1]), reverse=backward)
                if n >= 0:
                    rows = rows[:n]
        if backward:
            rows.reverse()
        # Unchecked: one damaged row must not hide the others from the list;
        # the caller checks each and shows a damaged one as such.
        return rows

    def runs_needing_attention(self, conn: Connection) -> list[Row[Any]]:
        """Rows of the runs that may need a person (blocked, failed, or running
        with a holder that may be dead) and have no decision waiting, through
        the status index: what `causes.collect` groups. Unchecked, as
        `list_runs`: the caller checks each and shows a damaged one as such."""
        pending = (
            select(decisions.c.id)
            .where(and_(decisions.c.run_id == runs.c.run_id, decisions.c.state == "pending"))
            .exists()
        )
        q = select(runs).where(runs.c.status.in_(["blocked", "failed", "running"]), ~pending).order_by(runs.c.run_id)
        return list(conn.execute(q))

    def count_matching(
        self, conn: Connection, *, statuses: Sequence[str] | None = None, text: str | None = None
    ) -> int:
        """How many rows `list_runs` would return with the same filters (for paging)."""
        q = self._filtered(select(func.count()).select_from(runs), statuses, text)
        return int(conn.execute(q).scalar() or 0)

    def count_runs(self, conn: Connection) -> dict[str, int]:
        rows = conn.execute(select(runs.c.status, func.count()).group_by(runs.c.status))
        return {r[0]: r[1] for r in rows}

    def run_ids(self, conn: Connection, *, after: str = "", limit: int = 500) -> list[str]:
        q = select(runs.c.run_id).where(runs.c.run_id > after).order_by(runs.c.run_id).limit(limit)
        return [r[0] for r in conn.execute(q)]

    def runs_waiting(self, conn: Connection, now: float, limit: int = 100, *, host: str = "") -> list[Row[Any]]:
        """Runs a worker may pick up: decided and reset runs first, then
        `running` runs whose holder may be dead (the caller asks `holder_state`
        of those on this host). A run held by a live lease on another host is
        never in the page, so a hundred of them cannot starve the rest."""
        pending = select(decisions.c.run_id).where(decisions.c.state == "pending")
        decided = or_(runs.c.status == "reset", runs.c.run_id.in_(pending))
        dead_maybe = and_(
            runs.c.status == "running",
            or_(
                runs.c.lease_owner.is_(None),
                runs.c.lease_host == host,  # its pid tells, before its lease lapses
                runs.c.lease_expires_at.is_(None),
                runs.c.lease_expires_at <= now,
            ),
        )
        q = (
            select(runs)
            .where(or_(decided, dead_maybe))
            .order_by(case((decided, 0), else_=1), runs.c.updated_at)
            .limit(limit)
        )
        return list(conn.execute(q))

    # -- checkpoints ----------------------------------------------------------

    def chain(self, conn: Connection, run_id: str, epoch: int) -> list[Row[Any]]:
        q = (
            select(checkpoints)
            .where(
                checkpoints.c.run_id == run_id,
                checkpoints.c.epoch == epoch,
                checkpoints.c.status == "live",
            )
            .order_by(checkpoints.c.seq)
        )
        return _rowcheck.check_all(checkpoints, conn.execute(q))

    def runs_by_id(self, conn: Connection, run_ids: Sequence[str], *, lock: bool = False) -> dict[str, Row[Any]]:
        """The rows of these runs (absent ones left out), each checked like
        `get_run`'s; with `lock`, held as `get_run(lock=True)` holds one, taken
        in run-id order (two writers locking overlapping groups do not deadlock)."""
        q = select(runs).where(runs.c.run_id.in_(list(run_ids))).order_by(runs.c.run_id)
        if lock and self.dialect.row_locks:
            q = q.with_for_update()
        return {r.run_id: _rowcheck.check(r) for r in conn.execute(q)}

    def runs_after(self, conn: Connection, after: str, limit: int) -> list[Any]:
        """The next `limit` run rows after run id `after`, in run-id order
        (a keyset page), each checked like `get_run`'s. On SQLite read
        through the driver (`_rawread`): a verify reads every run row."""
        if self.is_sqlite:
            found: Iterator[Any] = _RUNS.rows(_driver(conn), "run_id > ? ORDER BY run_id LIMIT ?", (after, limit))
        else:
            found = iter(conn.execute(select(runs).where(runs.c.run_id > after).order_by(runs.c.run_id).limit(limit)))
        return [_rowcheck.check(r) for r in found]

    def runs_between(self, conn: Connection, first: str, last: str) -> dict[str, Any]:
        """The run rows from run id `first` to `last`, both included, each checked."""
        if self.is_sqlite:
            found: Iterator[Any] = _RUNS.rows(_driver(conn), "run_id >= ? AND run_id <= ?", (first, last))
        else:
            found = iter(conn.execute(select(runs).where(runs.c.run_id >= first, runs.c.run_id <= last)))
        return {r.run_id: _rowcheck.check(r) for r in found}

    def rows_of_runs(self, conn: Connection, run_ids: Sequence[str]) -> dict[str, OwnRows]:
        """What a view reads of each run (`all_checkpoints`, `steps_for`,
        `effects_for`, `decisions_for`), for many runs in four indexed queries
        instead of four per run: a decision for a group reads 300 runs' rows."""
        ids = list(run_ids)
        with_claims = "phasegate_claims" in self.tables
        out = {rid: OwnRows([], [], [], [], [] if with_claims else None) for rid in ids}
        if not ids:
            return out
        live_steps = and_(steps.c.run_id.in_(ids), steps.c.discarded == False)  # noqa: E712
        ckpt_order = (checkpoints.c.run_id, checkpoints.c.epoch, checkpoints.c.seq)
        queries: tuple[tuple[Any, Any], ...] = (
            (checkpoints, select(checkpoints).where(checkpoints.c.run_id.in_(ids)).order_by(*ckpt_order)),
            (steps, select(steps).where(live_steps).order_by(steps.c.id)),
            (effects, select(effects).where(effects.c.run_id.in_(ids)).order_by(effects.c.id)),
            (decisions, select(decisions).where(decisions.c.run_id.in_(ids)).order_by(decisions.c.id)),
        )
        if with_claims:
            queries += ((claims, select(claims).where(claims.c.run_id.in_(ids)).order_by(claims.c.id)),)
        for i, (table, q) in enumerate(queries):
            for row in _rowcheck.check_all(table, conn.execute(q)):
                out[row.run_id][i].append(row)  # type: ignore[union-attr]
        return out

    def live_chains(self, conn: Connection, epochs: Mapping[str, int]) -> Iterator[tuple[str, list[Any]]]:
        """The live chain of each run's current epoch (`epochs`: run id to
        epoch), run after run in run-id order, from one streamed query: what
        `chain` gives for each, without a statement per run. Only one run's
        rows are held at a time.

        On SQLite the rows are read through the driver, in the transaction
        `conn` holds, with `envelope` and `output_json` as their stored bytes
        (`_sqlite.stored_text`): what a verify hashes, without SQLAlchemy's
        row handling, a decode and an encode back per value. Elsewhere they
        are `chain`'s rows."""
        if not epochs:
            return
        if self.is_sqlite:
            raw = _driver(conn)
            # The page's runs are a run-id range: the rows stream out of the
            # (run_id, epoch, seq) index in its order. A join on the runs
            # table, or any other order, made SQLite copy every selected
            # output into a temporary sorter first.
            rows: Iterator[Any] = _rawread.LIVE_CHECKPOINTS.rows(
                raw,
                "run_id >= ? AND run_id <= ? AND status = 'live' ORDER BY run_id, epoch, seq",
                (min(epochs), max(epochs)),
            )
            as_bytes = _rawread.STORED_BYTES
        else:
            q = (
                select(checkpoints)
                .where(checkpoints.c.run_id.in_(sorted(epochs)), checkpoints.c.status == "live")
                .order_by(checkpoints.c.run_id, checkpoints.c.epoch, checkpoints.c.seq)
            )
            # Streamed: PostgreSQL's client-side cursor would otherwise hold every
            # output of the page in memory at once.
            rows = iter(conn.execution_options(yield_per=16).execute(q))
            as_bytes = frozenset()
        held: list[Any] = []
        for row in rows:
            if row.epoch != epochs.get(row.run_id):
                continue  # an earlier epoch's entry, kept live by nothing that reads it here, or another page's run
            if held and row.run_id != held[0].run_id:
                yield held[0].run_id, _rowcheck.check_all(checkpoints, held, as_bytes=as_bytes)
                held = []
            held.append(row)
        if held:
            yield held[0].run_id, _rowcheck.check_all(checkpoints, held, as_bytes=as_bytes)

    def next_seq(self, conn: Connection, run_id: str, epoch: int) -> int:
        q = select(func.max(checkpoints.c.seq)).where(checkpoints.c.run_id == run_id, checkpoints.c.epoch == epoch)
        top = conn.execute(q).scalar()
        if top is not None and not isinstance(top, int):
            raise StoreError(
                f"a checkpoint of run {run_id!r} is damaged (seq {str(top)[:40]!r}); nothing was changed",
                title="damaged record",
            )
        return 0 if top is None else int(top) + 1

    def insert_checkpoint(self, conn: Connection, values: dict[str, Any]) -> None:
        conn.execute(insert(checkpoints).values(**values))

    def set_checkpoint_status(
        self, conn: Connection, run_id: str, epoch: int, seqs: Sequence[int], status: str
    ) -> None:
        if seqs:
            conn.execute(
                update(checkpoints)
                .where(
                    checkpoints.c.run_id == run_id,
                    checkpoints.c.epoch == epoch,
                    checkpoints.c.seq.in_(list(seqs)),
                )
                .values(status=status)
            )

    def archive_epoch(self, conn: Connection, run_id: str, epoch: int) -> None:
        conn.execute(
            update(checkpoints)
            .where(checkpoints.c.run_id == run_id, checkpoints.c.epoch == epoch)
            .values(status="archived")
        )

    def all_checkpoints(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        q = select(checkpoints).where(checkpoints.c.run_id == run_id).order_by(checkpoints.c.epoch, checkpoints.c.seq)
        return _rowcheck.check_all(checkpoints, conn.execute(q))

    def set_output_state(self, conn: Connection, ckpt_id: int, state: str, archive_path: str | None) -> None:
        conn.execute(
            update(checkpoints)
            .where(checkpoints.c.id == ckpt_id)
            .values(output_state=state, output_json=None, archive_path=archive_path)
        )

    # -- durable steps --------------------------------------------------------

    def steps_for(self, conn: Connection, run_id: str, phase: str | None = None) -> list[Row[Any]]:
        q = select(steps).where(steps.c.run_id == run_id, steps.c.discarded == False)  # noqa: E712
        if phase is not None:
            q = q.where(steps.c.phase == phase)
        return _rowcheck.check_all(steps, conn.execute(q.order_by(steps.c.id)))

    def discard_steps(self, conn: Connection, run_id: str, phases: Sequence[str] | None) -> None:
        cond = steps.c.run_id == run_id
        if phases is not None:
            cond = and_(cond, steps.c.phase.in_(list(phases)))
        conn.execute(update(steps).where(cond).values(discarded=True))

    def delete_steps(self, conn: Connection, ids: Sequence[int]) -> None:
        if ids:
            conn.execute(delete(steps).where(steps.c.id.in_(list(ids))))

    # -- effects --------------------------------------------------------------

    def effects_for(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        return _rowcheck.check_all(
            effects, conn.execute(select(effects).where(effects.c.run_id == run_id).order_by(effects.c.id))
        )

    def effects_of_runs(self, conn: Connection, run_ids: Sequence[str]) -> dict[str, list[Any]]:
        """`effects_for` of several runs in one query (verify reads a page at a time)."""
        if not run_ids:
            return {}
        found: Iterable[Any]
        if self.is_sqlite:
            # Through the driver, by the run-id range (`ix_effects_run`); runs in the range but not asked for are left out below.
            where = "run_id >= ? AND run_id <= ? ORDER BY run_id, id"
            found = _EFFECTS.rows(_driver(conn), where, (min(run_ids), max(run_ids)))
        else:
            found = conn.execute(
                select(effects).where(effects.c.run_id.in_(list(run_ids))).order_by(effects.c.run_id, effects.c.id)
            )
        asked = set(run_ids)
        out: dict[str, list[Any]] = {}
        for row in _rowcheck.check_all(effects, found):
            if row.run_id in asked:
                out.setdefault(row.run_id, []).append(row)
        return out

    def effect_by_key(self, conn: Connection, key: str) -> Row[Any] | None:
        found = _rowcheck.check_all(effects, conn.execute(select(effects).where(effects.c.key == key)).fetchmany(1))
        return found[0] if found else None

    def insert_effect(self, conn: Connection, values: dict[str, Any]) -> None:
        conn.execute(insert(effects).values(**values))

    def note_effect(self, conn: Connection, run_id: str, key: str) -> None:
        """A new effect record ends the run's effect history (seals.py)."""
        conn.execute(
            update(runs).where(runs.c.run_id == run_id).values(effects_last=key, effects_count=runs.c.effects_count + 1)
        )

    def update_effect(self, conn: Connection, key: str, values: dict[str, Any]) -> None:
        conn.execute(update(effects).where(effects.c.key == key).values(**values))

    # -- decisions ------------------------------------------------------------

    def decisions_for(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        q = select(decisions).where(decisions.c.run_id == run_id).order_by(decisions.c.id)
        return _rowcheck.check_all(decisions, conn.execute(q))

    def insert_decision(self, conn: Connection, values: dict[str, Any]) -> int:
        res = conn.execute(insert(decisions).values(**values))
        pk = res.inserted_primary_key
        self._rerank(conn, values["run_id"])
        return int(pk[0]) if pk else 0

    def insert_decisions(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Several decision rows in one statement; their ids, in the order given."""
        if len(rows) == 1:
            return [self.insert_decision(conn, dict(rows[0]))]
        q = insert(decisions).returning(decisions.c.id, sort_by_parameter_order=True)
        ids = [int(r[0]) for r in conn.execute(q, list(rows))]
        # Their decisions changed: the runs' stored attention ranks, in one statement.
        self._rerank_many(conn, sorted({str(r["run_id"]) for r in rows}))
        return ids

    def settle_decision(self, conn: Connection, decision_id: int, state: str, at: float) -> None:
        conn.execute(update(decisions).where(decisions.c.id == decision_id).values(state=state, applied_at=at))
        self._rerank(conn, select(decisions.c.run_id).where(decisions.c.id == decision_id).scalar_subquery())

    def update_decision(self, conn: Connection, decision_id: int, values: dict[str, Any]) -> None:
        conn.execute(update(decisions).where(decisions.c.id == decision_id).values(**values))
        if "state" in values:  # a seconded proposal becomes pending: the run's rank follows
            self._rerank(conn, select(decisions.c.run_id).where(decisions.c.id == decision_id).scalar_subquery())

    def void_proposals(self, conn: Connection, ids: Sequence[int], at: float) -> None:
        """Settle these proposals void, those still proposed only (one seconded
        meanwhile is a decision now, and is left alone)."""
        if ids:
            conn.execute(
                update(decisions)
                .where(decisions.c.id.in_(list(ids)), decisions.c.state == "proposed")
                .values(state="void", applied_at=at)
            )

    def open_proposals(self, conn: Connection, run_ids: Sequence[str], now: float) -> list[Row[Any]]:
        """Proposals of these runs still waiting for a second operator (one
        query for a page of the runs list, by its run ids)."""
        if not run_ids:
            return []
        q = (
            select(decisions)
            .where(
                decisions.c.run_id.in_(list(run_ids)),
                decisions.c.state == "proposed",
                decisions.c.expires_at > now,
            )
            .order_by(decisions.c.id)
        )
        return _rowcheck.check_all(decisions, conn.execute(q))

    # -- claims and the policy (version 4) ----------------------------------------

    def current_claims(self, conn: Connection, run_ids: Sequence[str] | None, now: float) -> dict[str, Row[Any]]:
        """The claim in force on each of these runs (one query for a page of
        the runs list, by its run ids; the runs query itself is left alone).
        `None`: on every run (the whole list, `phasegate status`: claims in
        force are few, and every run id as a parameter would not be)."""
        if "phasegate_claims" not in self.tables or (run_ids is not None and not run_ids):
            return {}
        q = select(claims).where(claims.c.released_at.is_(None), claims.c.expires_at > now).order_by(claims.c.id)
        if run_ids is not None:
            q = q.where(claims.c.run_id.in_(list(run_ids)))
        return {r.run_id: r for r in _rowcheck.check_all(claims, conn.execute(q))}

    def claims_for(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every claim row of a run, oldest first (its claim audit)."""
        if "phasegate_claims" not in self.tables:
            return []
        q = select(claims).where(claims.c.run_id == run_id).order_by(claims.c.id)
        return _rowcheck.check_all(claims, conn.execute(q))

    def insert_claim(self, conn: Connection, values: dict[str, Any]) -> None:
        conn.execute(insert(claims).values(**values))

    def end_claim(self, conn: Connection, claim_id: int, *, at: float, by: str, account: str) -> None:
        conn.execute(
            update(claims)
            .where(claims.c.id == claim_id)
            .values(released_at=at, released_by=by, released_account=account)
        )

    def policies(self, conn: Connection, limit: int = 20) -> list[Row[Any]]:
        """The policy's changes, newest first (the first is in force)."""
        if "phasegate_policy" not in self.tables:
            return []
        q = select(policy).order_by(policy.c.id.desc()).limit(limit)
        return _rowcheck.check_all(policy, conn.execute(q))

    def insert_policy(self, conn: Connection, values: dict[str, Any]) -> None:
        conn.execute(insert(policy).values(**values))

    # -- phase sources ----------------------------------------------------------

    def known_sources(self, conn: Connection, hashes: Sequence[str]) -> set[str]:
        if "phasegate_sources" not in self.tables or not hashes:
            return set()
        q = select(sources.c.code_hash).where(sources.c.code_hash.in_(list(hashes)))
        return {r[0] for r in conn.execute(q)}

    def insert_source(self, conn: Connection, code_hash: str, text: str, at: float) -> None:
        conn.execute(insert(sources).values(code_hash=code_hash, source=text, created_at=at))

    def get_sources(self, conn: Connection, hashes: Sequence[str]) -> dict[str, str]:
        if "phasegate_sources" not in self.tables or not hashes:
            return {}
        q = select(sources.c.code_hash, sources.c.source).where(sources.c.code_hash.in_(list(hashes)))
        return {r[0]: r[1] for r in conn.execute(q) if isinstance(r[1], str)}

    # -- alerts -------------------------------------------------------------------

    def announced(self, conn: Connection, keys: Sequence[str]) -> dict[str, Row[Any]]:
        """The alert rows of these stops that exist (claimed, sent or failed)."""
        if "phasegate_alerts" not in self.tables or not keys:
            return {}
        q = select(alerts).where(alerts.c.stop_key.in_(list(keys)))
        return {r.stop_key: r for r in conn.execute(q)}

    def insert_alert(self, conn: Connection, values: dict[str, Any]) -> None:
        """Raises IntegrityError when another watch claimed the stop first."""
        conn.execute(insert(alerts).values(**values))

    def reclaim_alert(self, conn: Connection, key: str, owner: str, now: float, stale_before: float) -> bool:
        """Take over a claim whose watch died before it could send."""
        n = conn.execute(
            update(alerts)
            .where(alerts.c.stop_key == key, alerts.c.state == "claimed", alerts.c.claimed_at < stale_before)
            .values(claimed_by=owner, claimed_at=now)
        ).rowcount
        return bool(n)

    def release_alert(self, conn: Connection, key: str, owner: str) -> None:
        conn.execute(delete(alerts).where(alerts.c.stop_key == key, alerts.c.claimed_by == owner))

    def settle_alert(self, conn: Connection, key: str, owner: str, values: dict[str, Any]) -> None:
        conn.execute(update(alerts).where(alerts.c.stop_key == key, alerts.c.claimed_by == owner).values(**values))

    # -- workers' heartbeats ---------------------------------------------------

    def beat_worker(self, values: dict[str, Any]) -> float:
        """Write one worker's heartbeat row (inserted the first time), its
        `last_seen` the lease clock's now; returns that time."""
        with self.write() as conn:
            now = self.lease_clock(conn, float(values["last_seen"]))
            values = {**values, "last_seen": now}
            if values.get("state") == "stopped":
                values["stopped_at"] = now
            if "phasegate_workers" not in self.tables:
                return now
            key = values["worker_id"]
            n = conn.execute(update(workers).where(workers.c.worker_id == key).values(**values)).rowcount
            if n == 0:
                conn.execute(insert(workers).values(**{**values, "started_at": values.get("started_at", now)}))
            return now

    def worker_rows(self, conn: Connection, *, limit: int = 100) -> list[Row[Any]]:
        """The workers seen most recently first (at most `limit`)."""
        if "phasegate_workers" not in self.tables:
            return []
        q = select(workers).order_by(workers.c.last_seen.desc(), workers.c.worker_id).limit(limit)
        return list(conn.execute(q))

    def prune_workers(self, conn: Connection, *, seen_before: float, keep: int) -> int:
        """Delete the rows of workers not seen since `seen_before` (stopped,
        or dead without a clean exit), and any stopped rows past the `keep`
        most recent: the table stays bounded however often workers restart."""
        if "phasegate_workers" not in self.tables:
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

    # -- the hot path -----------------------------------------------------------
    # Checkpoints, effect records and durable steps are written with fixed SQL
    # straight through the driver on the reused connection: building and
    # compiling a Core statement per write costs more CPU than the write.

    _HOT_SQL: dict[str, str] = {
        "checkpoint": (
            "INSERT INTO phasegate_checkpoints (run_id, epoch, seq, kind, phase, envelope, payload_hash,"
            " prev_hash, output_json, output_state, output_bytes, archive_path, created_at, status)"
            " VALUES (:run_id, :epoch, :seq, :kind, :phase, :envelope, :payload_hash, :prev_hash,"
            " :output_json, :output_state, :output_bytes, NULL, :created_at, 'live')"
        ),
        "advance": (
            "UPDATE phasegate_runs SET head_seq = :head_seq, head_hash = :head_hash,"
            " frontier_phase = :frontier_phase, frontier_index = :frontier_index, steps_done = :steps_done,"
            " last_checkpoint_at = :now WHERE run_id = :run_id AND lease_owner = :owner"
            " AND lease_expires_at > :lease_now"
        ),
        # Reads, not writes: a write to the run row would dirty its pages and
        # indexes in every effect and step commit. The dialect makes the read
        # hold until commit (SQLite: the BEGIN IMMEDIATE lock; PostgreSQL: FOR UPDATE).
        "fence": (
            "SELECT 1 FROM phasegate_runs WHERE run_id = :run_id AND lease_owner = :owner"
            " AND lease_expires_at > :lease_now"
        ),
        "held": (
            "SELECT 1 FROM phasegate_runs WHERE run_id = :run_id AND lease_owner = :owner"
            " AND lease_expires_at > :lease_now"
        ),
        "step": (
            "INSERT INTO phasegate_steps (run_id, phase, step_key, result_json, result_hash, created_at, discarded)"
            " VALUES (:run_id, :phase, :step_key, :result_json, :result_hash, :created_at, FALSE)"
        ),
        "intent": (
            "INSERT INTO phasegate_effects (run_id, phase, name, key, state, idempotent, atomic, attempt,"
            " retry_ok, intent_at, prev_key, seal, reconcilable, redo_on_rewind)"
            " VALUES (:run_id, :phase, :name, :key, 'intent', :idempotent, FALSE, 1, FALSE, :intent_at,"
            " :prev_key, :seal, :reconcilable, :redo_on_rewind)"
        ),
        # Where the run's effect history ends (seals.py): written with each new
        # intent, in its transaction, so a deleted last record is seen.
        "effects_head": (
            "UPDATE phasegate_runs SET effects_last = :key, effects_count = effects_count + 1"
            " WHERE run_id = :run_id AND lease_owner = :owner AND lease_expires_at > :lease_now"
        ),
        "reintent": (
            "UPDATE phasegate_effects SET attempt = :attempt, retry_ok = FALSE, intent_at = :intent_at,"
            " idempotent = :idempotent, reconcilable = :reconcilable, seal = :seal WHERE key = :key"
        ),
        "effect_done": (
            "UPDATE phasegate_effects SET state = 'done', done_at = :done_at, result_json = :result_json,"
            " result_hash = :result_hash, seal = :seal WHERE key = :key"
        ),
    }

    # The head moved under the lease, and the entry inserted only when it
    # did (0 rows: the lease is gone, nothing written). A data-modifying CTE:
    # PostgreSQL only (SQLite's WITH takes no UPDATE, and needs no round trips).
    _CHECKPOINT_ADVANCE = (
        "WITH moved AS (UPDATE phasegate_runs SET head_seq = :head_seq, head_hash = :head_hash,"
        " frontier_phase = :frontier_phase, frontier_index = :frontier_index, steps_done = :steps_done,"
        " last_checkpoint_at = :now WHERE run_id = :run_id AND lease_owner = :owner"
        " AND lease_expires_at > :lease_now RETURNING run_id)"
        " INSERT INTO phasegate_checkpoints (run_id, epoch, seq, kind, phase, envelope, payload_hash,"
        " prev_hash, output_json, output_state, output_bytes, archive_path, created_at, status)"
        " SELECT run_id, :epoch, :seq, :kind, :phase, :envelope, :payload_hash, :prev_hash,"
        " :output_json, :output_state, :output_bytes, NULL, :created_at, 'live' FROM moved"
    )

    def hot_tx(self, first: Sequence[tuple[str, dict[str, Any]]] = ()) -> HotScope:
        """One write transaction on the reused connection, driven at the
        driver level: BEGIN IMMEDIATE, the `first` statements (name,
        parameters), the caller's, COMMIT (an fsync under synchronous=FULL).
        Rolled back on any exception. A class, not a generator: entered at
        every boundary and every effect, where contextlib's machinery cost
        more than the statements' binding."""
        return HotScope(self, first)

    # -- live -----------------------------------------------------------------

    def data_version_probe(self) -> ChangeProbe:
        if self.is_sqlite:
            return DataVersion(self)
        return _postgres.ChangeFeed(self.target)


class OwnRows(NamedTuple):
    """A run's own rows, as a view reads them."""

    checkpoints: list[Row[Any]]
    steps: list[Row[Any]]
    effects: list[Row[Any]]
    decisions: list[Row[Any]]
    claims: list[Row[Any]] | None = None
    """None: not read with the others (`claims_for` reads them)."""


#: The lease columns of a run nobody holds.
LEASE_CLEARED: dict[str, Any] = {
    "lease_owner": None,
    "lease_host": None,
    "lease_pid": None,
    "lease_expires_at": None,
}


class ChangeProbe(Protocol):
    """Answers whether another connection committed since the last call."""

    def changed(self) -> bool: ...

    def close(self) -> None: ...


class HotScope:
    """`Store.hot_tx`'s transaction: the hot lock held from enter to exit."""

    __slots__ = ("_store", "_first", "_raw", "_cur")

    def __init__(self, store: Store, first: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self._store = store
        self._first = first

    def __enter__(self) -> HotTx:
        store = self._store
        store._hot_lock.acquire()
        try:
            raw = store._hot_connection().connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()
        except BaseException:
            store._hot_lock.release()
            raise
        self._raw, self._cur = raw, cur
        tx = HotTx(cur, store._hot_sql)
        try:
            store.dialect.hot_begin(raw, cur)
            for name, params in self._first:
                tx.run(name, params)
        except BaseException as exc:
            self._abort(exc)
            raise
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        if exc is None:
            try:
                self._store.dialect.hot_commit(self._raw, self._cur)
            except BaseException as err:
                self._abort(err)
                raise
            self._end()
            return False
        self._abort(exc)
        return False  # the caller's exception goes on

    def _abort(self, exc: BaseException) -> None:
        """Roll back, let go of the connection and the lock; a driver error
        becomes the store's own (raised from here), anything else goes on as it was."""
        store = self._store
        try:
            try:
                store.dialect.hot_rollback(self._raw, self._cur)
            except Exception:  # noqa: BLE001 - no transaction left to roll back
                pass
            if isinstance(exc, store.dialect.DriverError):
                store._drop_hot(self._raw)
                raise store.explain(exc) from None
        finally:
            self._end()

    def _end(self) -> None:
        try:
            self._cur.close()
        finally:
            self._store._hot_lock.release()


class HotTx:
    """The statements a hot transaction may run, by name."""

    __slots__ = ("_cur", "_sql")

    def __init__(self, cur: Any, sql: dict[str, str]) -> None:
        self._cur = cur
        self._sql = sql

    def run(self, name: str, params: dict[str, Any]) -> int:
        """Returns the row count: 0 from a fenced update means the lease is gone."""
        self._cur.execute(self._sql[name], params)
        return int(self._cur.rowcount)

    def fenced(self, run_id: str, owner: str, now: float) -> bool:
        """Whether `owner` still holds the run's unexpired lease, held so until commit."""
        self._cur.execute(self._sql["fence"], {"run_id": run_id, "owner": owner, "now": now})
        return self._cur.fetchone() is not None


class DataVersion:
    """One long-lived connection that answers "did another connection commit
    since I last asked?" via SQLite's `PRAGMA data_version`, which changes only
    when some other connection commits."""

    def __init__(self, store: Store) -> None:
        self._conn = store.sa.raw_connection()
        self._last: int | None = None

    def changed(self) -> bool:
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
        self._conn.close()
