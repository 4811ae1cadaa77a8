"""The store: every read and write the engine makes, and nothing else.

A `Store` is one open database (`_database.Database`: the connection, its
dialect, the kinds of transaction and the lease clock) and a repository per
table, each in a module of its own, all sharing that one database:
`store.runs.get(conn, run_id)`, `store.effects.add(conn, record)`. What
spans the whole store (opening, closing, transactions, the lease clock) is
asked of the store itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..history import keys
from ._alerts import Alerts
from ._changes import ChangeProbe, Changes
from ._checkpoints import Checkpoints
from ._database import DEFAULT_LEASE_SECONDS, Database
from ._decisions import Decisions, NewDecision
from ._dialect import Dialect
from ._effects import Effects
from ._hotpath import HotPath, HotScope, HotTx
from ._lease import LEASE_CLEARED, Leases
from ._messages import Messages, NewMessage
from ._meta import SEAL_KEY, Meta
from ._oversight import Claims, NewPolicy, PolicyChanges
from ._ownrows import OwnRows, OwnRowsReader
from ._runfeed import RunFeed
from ._runs import NewRun, RunChange, Runs
from ._seals import Seals
from ._sources import Sources
from ._steps import Steps
from ._workers import Workers

# Names importers use from here, wherever they are defined now.
__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "LEASE_CLEARED",
    "ChangeProbe",
    "Connection",
    "Duplicate",
    "HotScope",
    "HotTx",
    "NewDecision",
    "NewMessage",
    "NewPolicy",
    "NewRun",
    "OwnRows",
    "RunChange",
    "Store",
]

#: A write that breaks a unique key (another process wrote the same row
#: first): the store's name for the driver's error, which its callers catch
#: without naming SQLAlchemy.
Duplicate = IntegrityError


class Store:
    """A phasegate database: SQLite by path (the default) or a URL
    (sqlite:///PATH, postgresql://...), and its tables' repositories.

    Raises:
        StoreError: the target is not a usable phasegate store (see `Database`).
    """

    def __init__(
        self,
        target: str | Path,
        *,
        create: bool = True,
        readonly: bool = False,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        # The key is read before the database is opened, so an upgrade that
        # seals (version 7: the policy's head) seals under the store's key.
        held = keys.from_env()
        self.db = db = Database(target, create=create, readonly=readonly, lease_seconds=lease_seconds, held_key=held)
        """The open database every repository shares."""
        self.hot_path = HotPath(db)
        """The hot path's fixed statements (checkpoints, effect records, steps)."""
        self.runs = Runs(db)
        """The runs table."""
        self.lease = Leases(db, self.runs, self.hot_path)
        """The runs' leases (columns of the runs table)."""
        self.checkpoints = Checkpoints(db)
        """The checkpoints table: each run's chain."""
        self.steps = Steps()
        """The durable steps table."""
        self.effects = Effects(db)
        """The effects table."""
        self.decisions = Decisions(self.runs, db)
        """The decisions table."""
        self.messages = Messages(db)
        """The messages table: what was sent into runs (`phasegate send`)."""
        self.claims = Claims(db)
        """The claims table."""
        self.meta = Meta(db)
        """The meta table's facts besides the schema version (the policy's head, the seal key)."""
        self.policy = PolicyChanges(db, self.meta)
        """The policy table."""
        self.sources = Sources(db)
        """The phase sources table."""
        self.alerts = Alerts(db)
        """The alerts table."""
        self.workers = Workers(db)
        """The workers table."""
        self.feed = RunFeed()
        """One run's rows written since a place (`follow`)."""
        self.own_rows = OwnRowsReader(db)
        """Many runs' own rows at once, across their tables."""
        self.changes = Changes(db)
        """Whether another process changed the store."""
        self.seals = Seals()
        """Every sealed record at once (a reseal)."""
        self.held_key: keys.SealKey | None = None
        """The key this process was given for the store (`PHASEGATE_SEAL_KEY_FILE`), or None."""
        self.store_key_id: str | None = None
        """The id of the key the store's seals are made under (None: plain hashes)."""
        try:
            self._check_seal_key()
        except BaseException:
            db.close()
            raise

    def _check_seal_key(self) -> None:
        """Compare the process's seal key with the store's: a store sealed
        under a key is written only with that key, an unkeyed one only without
        (`phasegate reseal` moves a store from one to the other). A new, empty
        store takes the process's key.

        The store is keyed when its meta row says so or when its newest
        records' seals do: deleting the meta row does not make a keyed store
        plain. The key is this store's alone (`seal_key`): another store open
        in the same process keeps its own."""
        self.held_key = held = keys.load_for(self.db.path)
        if self.db.schema_problem:
            self.seal_key = held
            return
        with self.read() as conn:
            stored = self.meta.get(conn, SEAL_KEY) or None
            # The records' mark, needed only where the meta row does not name a key.
            newest = self.seals.newest(conn, self.db.tables) if stored is None else []
            marked = next((i for s in newest if (i := keys.id_of(s))), None)
            empty = (
                stored is None
                and marked is None
                and held is not None
                and self.runs.first_id(conn) is None
                and not self.policy.changes(conn, limit=1)
            )
        if empty and not self.readonly and held is not None:
            with self.write() as conn:
                self.meta.put(conn, SEAL_KEY, held.key_id)
            stored = held.key_id
        stored = stored or marked
        self.store_key_id = stored
        mine = held.key_id if held else None
        if stored is None:
            self.seal_key = None
        elif held is not None and held.key_id == stored:
            self.seal_key = held
        else:
            # Read as keyed without the key: kinds and key ids checked, the
            # HMACs not (they cannot be), never every record reported as damage.
            self.seal_key = keys.SealKey.unheld(stored)
        if stored == mine:
            return
        if stored is None:
            self.db.seal_problem = (
                f"{self.where} carries no mark of a seal key, and {keys.KEY_FILE_ENV} names one (id {mine}):"
                " if it was never keyed, seal it under the key first with `phasegate reseal --key-file FILE`"
            )
        elif mine is None:
            self.db.seal_problem = (
                f"{self.where} is sealed under a key (id {stored}): set {keys.KEY_FILE_ENV} to its key file"
            )
        else:
            self.db.seal_problem = (
                f"{self.where} is sealed under key {stored}, not the one {keys.KEY_FILE_ENV} names ({mine})"
            )

    # -- what the database is ---------------------------------------------------

    @property
    def seal_key(self) -> keys.SealKey | None:
        """This store's seal key: the one its records are sealed and checked
        under (None: plain hashes; `SealKey.held` False: keyed under a key
        this process does not hold, so nothing is written). Another store
        open in the same process has its own."""
        return self.db.seal_key

    @seal_key.setter
    def seal_key(self, key: keys.SealKey | None) -> None:
        self.db.seal_key = key

    @property
    def target(self) -> str:
        """What the store was opened by (a path or URL, as given)."""
        return self.db.target

    @property
    def where(self) -> str:
        """Where the store is, safe to show (a URL without its password)."""
        return self.db.where

    @property
    def path(self) -> Path | None:
        """The SQLite file (None on PostgreSQL)."""
        return self.db.path

    @property
    def readonly(self) -> bool:
        """Whether the store was opened read-only."""
        return self.db.readonly

    @property
    def schema_problem(self) -> str | None:
        """Set when the stored schema is one this code does not know; the
        engine treats it as an integrity failure and writes nothing."""
        return self.db.schema_problem

    @property
    def tables(self) -> set[str]:
        """The tables this store has (an older store opened read-only may lack some)."""
        return self.db.tables

    @property
    def dialect(self) -> Dialect:
        """The backend's module (`_sqlite` or `_postgres`)."""
        return self.db.dialect

    @property
    def is_sqlite(self) -> bool:
        """Whether this is an SQLite store (else PostgreSQL)."""
        return self.db.is_sqlite

    # -- store-wide ---------------------------------------------------------------

    def close(self) -> None:
        """Close the reused connection and the pool, and let go of the file."""
        self.db.close()

    def read(self) -> AbstractContextManager[Connection]:
        """A read transaction on a pooled connection (`Database.read`)."""
        return self.db.read()

    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction that holds the write lock from its first
        statement, on a fresh pooled connection (`Database.write`).

        Raises:
            StoreError: the store is read-only or of an unknown schema, or the database failed.
        """
        return self.db.write()

    def scan(self) -> AbstractContextManager[Connection]:
        """A connection for a long read over many runs, on which `read_on`
        opens one read transaction after another (`Database.scan`)."""
        return self.db.scan()

    def read_on(self, conn: Connection) -> AbstractContextManager[Connection]:
        """A read transaction on a `scan` connection, with `read`'s errors."""
        return self.db.read_on(conn)

    def hot(self) -> AbstractContextManager[Connection]:
        """A transaction on the reused connection of the checkpoint path
        (`Database.hot`). One thread at a time."""
        return self.db.hot()

    def hot_tx(self, first: Sequence[tuple[str, dict[str, Any]]] = ()) -> HotScope:
        """One write transaction on the reused connection, driven at the
        driver level: BEGIN IMMEDIATE, the `first` statements (name,
        parameters), the caller's, COMMIT (an fsync under synchronous=FULL).
        Rolled back on any exception. A class, not a generator: entered at
        every boundary and every effect, where contextlib's machinery cost
        more than the statements' binding."""
        return HotScope(self.db, self.hot_path.sql, first)

    def lease_clock(self, conn: Connection, host_now: float) -> float:
        """The lease clock's "now", read on `conn` (the server's on PostgreSQL;
        on SQLite, `host_now`)."""
        return self.db.lease_clock(conn, host_now)
