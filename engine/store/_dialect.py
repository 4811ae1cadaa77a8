"""What a backend is to the rest of the store: the one interface the SQLite
(`_sqlite`) and PostgreSQL (`_postgres`) modules both satisfy.

Each backend is a module, not a class: its constants and functions are the
members below, and mypy checks the module against this Protocol where
`Database` picks one. Opening a backend (its URL or path, its engine) is not
part of it: `Database` asks each for that by name, as the two differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ..errors import StoreError


class Dialect(Protocol):
    """A backend's specifics, as the database, the hot path and the
    repositories ask them."""

    name: str
    """The backend's name ("sqlite", "postgresql")."""
    row_locks: bool
    """Whether the backend has row locks (SELECT ... FOR UPDATE); SQLite's BEGIN IMMEDIATE serialises writers instead."""
    FENCE_LOCK: str
    """What the hot path's lease check appends to hold the run's row until commit (SQLite: nothing)."""
    CHECKPOINT_IN_ONE: bool
    """Whether a checkpoint is one statement (a data-modifying CTE): a round trip saved a boundary."""
    LEASE_NOW_SQL: str
    """The lease clock's now in SQL (SQLite: the host's time as `:now`; PostgreSQL: the server's)."""

    @property
    def DriverError(self) -> type[Exception]:  # noqa: N802 - a class, as the backends name it
        """The driver's error base class, for errors raised outside SQLAlchemy."""
        ...

    def disconnected(self, raw: Any) -> bool:
        """Whether the driver connection `raw` is gone for good (a server restart, a failover)."""
        ...

    def hot_sql(self, sql: str) -> str:
        """A hot statement written with `:name` parameters, in the driver's parameter style."""
        ...

    def hot_begin(self, raw: Any, cur: Any) -> None:
        """Begin a hot transaction on the driver connection (taking the write lock up front where the backend can)."""
        ...

    def hot_commit(self, raw: Any, cur: Any) -> None:
        """Commit a hot transaction."""
        ...

    def hot_rollback(self, raw: Any, cur: Any) -> None:
        """Roll back a hot transaction."""
        ...

    def alone_begin(self, raw: Any, cur: Any) -> None:
        """Before one statement that is its own transaction."""
        ...

    def alone_end(self, raw: Any, cur: Any) -> None:
        """After it: the connection as `alone_begin` found it."""
        ...

    def scan_begin(self, raw: Any) -> None:
        """Before a long read over many runs (a verify)."""
        ...

    def scan_end(self, raw: Any) -> None:
        """After it."""
        ...

    def explain(self, exc: BaseException, where: str | Path | None) -> StoreError:
        """The store's own one-line error for a driver's."""
        ...
