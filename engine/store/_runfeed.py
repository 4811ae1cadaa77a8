"""One run's rows written since a place: what `follow` reads at each change.

Keyset pages over the run's own rows only (each table's index on `run_id`
leads every query), by the rows' ids: a step, an effect record, a checkpoint
or a decision written after the last one read has a higher id. Effect
records and decisions also change in place (an intent completes, a decision
applies): those the caller still holds open are read again by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row

from .schema import checkpoints, decisions, effects, steps

#: The most rows of one table one read returns: a long history is read a
#: page at a time, never all at once.
PAGE = 500


class RunFeed:
    """Reads of one run's new and changed rows, a page at a time."""

    def steps_after(self, conn: Connection, run_id: str, after: int, limit: int = PAGE) -> list[Row[Any]]:
        """The run's durable steps with an id above `after`, oldest first."""
        q = (
            select(steps.c.id, steps.c.phase, steps.c.step_key, steps.c.created_at)
            .where(steps.c.run_id == run_id, steps.c.id > after)
            .order_by(steps.c.id)
            .limit(limit)
        )
        return list(conn.execute(q))

    def effects_after(self, conn: Connection, run_id: str, after: int, limit: int = PAGE) -> list[Row[Any]]:
        """The run's effect records with an id above `after`, oldest first."""
        q = self._effects().where(effects.c.run_id == run_id, effects.c.id > after).order_by(effects.c.id).limit(limit)
        return list(conn.execute(q))

    def effects_by_id(self, conn: Connection, run_id: str, ids: Sequence[int]) -> list[Row[Any]]:
        """These effect records of the run again (the caller's open intents)."""
        if not ids:
            return []
        q = self._effects().where(effects.c.run_id == run_id, effects.c.id.in_(list(ids))).order_by(effects.c.id)
        return list(conn.execute(q))

    def checkpoints_after(self, conn: Connection, run_id: str, after: int, limit: int = PAGE) -> list[Row[Any]]:
        """The run's checkpoint entries with an id above `after`, oldest first."""
        q = (
            select(
                checkpoints.c.id,
                checkpoints.c.kind,
                checkpoints.c.phase,
                checkpoints.c.epoch,
                checkpoints.c.seq,
                checkpoints.c.created_at,
            )
            .where(checkpoints.c.run_id == run_id, checkpoints.c.id > after)
            .order_by(checkpoints.c.id)
            .limit(limit)
        )
        return list(conn.execute(q))

    def decisions_after(self, conn: Connection, run_id: str, after: int, limit: int = PAGE) -> list[Row[Any]]:
        """The run's decisions with an id above `after`, oldest first."""
        q = self._decisions().where(decisions.c.run_id == run_id, decisions.c.id > after)
        return list(conn.execute(q.order_by(decisions.c.id).limit(limit)))

    def decisions_by_id(self, conn: Connection, run_id: str, ids: Sequence[int]) -> list[Row[Any]]:
        """These decisions of the run again (the caller's pending ones)."""
        if not ids:
            return []
        q = self._decisions().where(decisions.c.run_id == run_id, decisions.c.id.in_(list(ids)))
        return list(conn.execute(q.order_by(decisions.c.id)))

    @staticmethod
    def _effects() -> Any:
        return select(
            effects.c.id,
            effects.c.phase,
            effects.c.name,
            effects.c.key,
            effects.c.state,
            effects.c.attempt,
            effects.c.intent_at,
            effects.c.done_at,
        )

    @staticmethod
    def _decisions() -> Any:
        return select(
            decisions.c.id,
            decisions.c.action,
            decisions.c.phase,
            decisions.c.operator,
            decisions.c.reason,
            decisions.c.state,
            decisions.c.at,
            decisions.c.applied_at,
        )
