"""A run's own rows, as a view reads them: its checkpoints, durable steps,
effects, decisions and claims, read for many runs at once. It owns no table:
it reads those of `_checkpoints.py`, `_steps.py`, `_effects.py`,
`_decisions.py` and `_oversight.py`, one indexed query each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import and_, select
from sqlalchemy.engine import Connection, Row

from . import _rowcheck
from ._database import Database
from .schema import checkpoints, claims, decisions, effects, steps


class OwnRows(NamedTuple):
    """A run's own rows, as a view reads them."""

    checkpoints: list[Row[Any]]
    steps: list[Row[Any]]
    effects: list[Row[Any]]
    decisions: list[Row[Any]]
    claims: list[Row[Any]] | None = None
    """None: not read with the others (`Claims.of_run` reads them)."""


class OwnRowsReader:
    """Reads of many runs' own rows."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def of_runs(self, conn: Connection, run_ids: Sequence[str]) -> dict[str, OwnRows]:
        """What a view reads of each run (`Checkpoints.of_run`, `Steps.of_run`,
        `Effects.of_run`, `Decisions.of_run`), for many runs in four indexed
        queries instead of four per run: a decision for a group reads 300 runs' rows.

        Args:
            conn: the transaction to read in.
            run_ids: the runs; each gets an entry, empty when it has no rows.

        Returns:
            Each run's rows, checked; its claims too where the store has the table.

        Raises:
            StoreError: a row is damaged (`_rowcheck`).
        """
        ids = list(run_ids)
        with_claims = "phasegate_claims" in self._db.tables
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
