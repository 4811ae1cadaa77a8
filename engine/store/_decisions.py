"""The decisions table (`phasegate_decisions`): what operators decided about
a run (pending until the run applies it, then applied or void), and the
proposals that wait for a second operator. A run's stored attention rank
follows its decisions: every change here has `Runs.rerank` move it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Row

from . import _rowcheck
from ._runs import Runs
from .schema import decisions


class Decisions:
    """Reads and writes of the decisions table."""

    def __init__(self, runs: Runs) -> None:
        self._runs = runs

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every decision row of the run, oldest first, checked."""
        q = select(decisions).where(decisions.c.run_id == run_id).order_by(decisions.c.id)
        return _rowcheck.check_all(decisions, conn.execute(q))

    def insert(self, conn: Connection, values: dict[str, Any]) -> int:
        """A new decision row; the run's attention rank follows.

        Returns:
            Its id.
        """
        res = conn.execute(insert(decisions).values(**values))
        pk = res.inserted_primary_key
        self._runs.rerank(conn, values["run_id"])
        return int(pk[0]) if pk else 0

    def insert_many(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Several decision rows in one statement; their ids, in the order given."""
        if len(rows) == 1:
            return [self.insert(conn, dict(rows[0]))]
        q = insert(decisions).returning(decisions.c.id, sort_by_parameter_order=True)
        ids = [int(r[0]) for r in conn.execute(q, list(rows))]
        # Their decisions changed: the runs' stored attention ranks, in one statement.
        self._runs.rerank_many(conn, sorted({str(r["run_id"]) for r in rows}))
        return ids

    def settle(self, conn: Connection, decision_id: int, state: str, at: float) -> None:
        """The decision applied or void (`state`) at `at`; its run's rank follows."""
        conn.execute(update(decisions).where(decisions.c.id == decision_id).values(state=state, applied_at=at))
        self._runs.rerank(conn, select(decisions.c.run_id).where(decisions.c.id == decision_id).scalar_subquery())

    def update(self, conn: Connection, decision_id: int, values: dict[str, Any]) -> None:
        """Change the decision's row; with a new state, its run's rank follows."""
        conn.execute(update(decisions).where(decisions.c.id == decision_id).values(**values))
        if "state" in values:  # a seconded proposal becomes pending: the run's rank follows
            self._runs.rerank(conn, select(decisions.c.run_id).where(decisions.c.id == decision_id).scalar_subquery())

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
