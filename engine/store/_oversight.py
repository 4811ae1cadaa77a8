"""The tables of oversight (schema version 4): claims (`phasegate_claims`:
an operator's hold on a run, in force until released or expired) and the
policy (`phasegate_policy`: its changes, newest in force). A store opened
read-only before its upgrade may lack them: then nothing is claimed and no
policy was ever set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Row

from . import _rowcheck
from ._database import Database
from .schema import claims, policy


class Claims:
    """Reads and writes of the claims table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def current(self, conn: Connection, run_ids: Sequence[str] | None, now: float) -> dict[str, Row[Any]]:
        """The claim in force on each of these runs (one query for a page of
        the runs list, by its run ids; the runs query itself is left alone).
        `None`: on every run (the whole list, `phasegate status`: claims in
        force are few, and every run id as a parameter would not be)."""
        if "phasegate_claims" not in self._db.tables or (run_ids is not None and not run_ids):
            return {}
        q = select(claims).where(claims.c.released_at.is_(None), claims.c.expires_at > now).order_by(claims.c.id)
        if run_ids is not None:
            q = q.where(claims.c.run_id.in_(list(run_ids)))
        return {r.run_id: r for r in _rowcheck.check_all(claims, conn.execute(q))}

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every claim row of a run, oldest first (its claim audit)."""
        if "phasegate_claims" not in self._db.tables:
            return []
        q = select(claims).where(claims.c.run_id == run_id).order_by(claims.c.id)
        return _rowcheck.check_all(claims, conn.execute(q))

    def insert(self, conn: Connection, values: dict[str, Any]) -> None:
        """A new claim row."""
        conn.execute(insert(claims).values(**values))

    def end(self, conn: Connection, claim_id: int, *, at: float, by: str, account: str) -> None:
        """Release the claim at `at`, by operator `by` of `account`."""
        conn.execute(
            update(claims)
            .where(claims.c.id == claim_id)
            .values(released_at=at, released_by=by, released_account=account)
        )


class PolicyChanges:
    """Reads and writes of the policy table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def changes(self, conn: Connection, limit: int = 20) -> list[Row[Any]]:
        """The policy's changes, newest first (the first is in force)."""
        if "phasegate_policy" not in self._db.tables:
            return []
        q = select(policy).order_by(policy.c.id.desc()).limit(limit)
        return _rowcheck.check_all(policy, conn.execute(q))

    def insert(self, conn: Connection, values: dict[str, Any]) -> None:
        """A change of the policy, in force from now on."""
        conn.execute(insert(policy).values(**values))
