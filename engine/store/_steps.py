"""The durable steps table (`phasegate_steps`): the results of a phase's
steps, so a rerun of the phase after an interruption replays them instead of
doing them again. A step's row on the hot path is `_hotpath.py`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, func, or_, outerjoin, select, update
from sqlalchemy.engine import Connection, Row

from . import _rowcheck
from .schema import runs, steps


class Steps:
    """Reads and writes of the durable steps table."""

    def of_run(self, conn: Connection, run_id: str, phase: str | None = None) -> list[Row[Any]]:
        """The run's steps not discarded (of `phase` only, when given), oldest first, checked."""
        q = select(steps).where(steps.c.run_id == run_id, steps.c.discarded == False)  # noqa: E712
        if phase is not None:
            q = q.where(steps.c.phase == phase)
        return _rowcheck.check_all(steps, conn.execute(q.order_by(steps.c.id)))

    def counts(self, conn: Connection, frontiers: Sequence[tuple[str, str]]) -> dict[str, int]:
        """Steps recorded (not discarded) in each (run id, phase): how far a
        running run has got into its frontier phase. The run row's own count
        moves only at a checkpoint (a step's commit leaves the row alone)."""
        if not frontiers:
            return {}
        cond = or_(*(and_(steps.c.run_id == r, steps.c.phase == p) for r, p in frontiers))
        q = (
            select(steps.c.run_id, func.count())
            .where(cond, steps.c.discarded == False)  # noqa: E712
            .group_by(steps.c.run_id)
        )
        return {str(r): int(n) for r, n in conn.execute(q)}

    def discard(self, conn: Connection, run_id: str, phases: Sequence[str] | None) -> None:
        """Mark the steps of these phases (None: of every phase) discarded:
        kept, but replayed no more (a rewind reopens the phases)."""
        cond = steps.c.run_id == run_id
        if phases is not None:
            cond = and_(cond, steps.c.phase.in_(list(phases)))
        conn.execute(update(steps).where(cond).values(discarded=True))

    def discard_keys(self, conn: Connection, run_id: str, phase: str, keys: Sequence[str]) -> None:
        """Mark these steps of one phase discarded (an approved replay drops
        what the old code saved from the divergence on)."""
        if keys:
            conn.execute(
                update(steps)
                .where(steps.c.run_id == run_id, steps.c.phase == phase, steps.c.step_key.in_(list(keys)))
                .values(discarded=True)
            )

    def prune(self, conn: Connection, ids: Sequence[int]) -> None:
        """Delete these step rows (a prune)."""
        if ids:
            conn.execute(delete(steps).where(steps.c.id.in_(list(ids))))

    def keyed_page(
        self, conn: Connection, step_key: str, *, ended: Sequence[str], after: str = "", limit: int = 500
    ) -> list[Row[Any]]:
        """A keyset page of the runs whose status is not in `ended`, after the
        run id `after`, each with its saved step of `step_key` if it has one
        (`phase`, `result_json`, `result_hash`; None when it has not), by run
        id. For `status --patch` (run/patches.py): read through the steps'
        (run_id, phase, step_key) index, a run at a time, never a scan of
        every run's steps."""
        found = and_(
            steps.c.run_id == runs.c.run_id,
            steps.c.step_key == step_key,
            steps.c.discarded == False,  # noqa: E712
        )
        q = (
            select(
                runs.c.run_id,
                runs.c.workflow,
                runs.c.status,
                runs.c.frontier_phase,
                steps.c.phase,
                steps.c.result_json,
                steps.c.result_hash,
            )
            .select_from(outerjoin(runs, steps, found))
            .where(runs.c.run_id > after, runs.c.status.not_in(list(ended)))
            .order_by(runs.c.run_id)
            .limit(limit)
        )
        return list(conn.execute(q))
