"""The effects table (`phasegate_effects`): one record per external effect a
phase makes, from its intent to its result, chained by seals (seals.py). It
also keeps where that history ends, in the run's row (`effects_last`,
`effects_count` of `phasegate_runs`), so that a deleted last record is seen.
Records written on the hot path are `_hotpath.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NotRequired, TypedDict

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Row

from . import _rawread, _rowcheck
from ._database import Database, driver
from .schema import effects, runs

_EFFECTS = _rawread.Reader(effects)


class EffectColumns(TypedDict):
    """An effect record's columns as written (all but its id): what crosses
    into `Effects.add` and `Effects.rewrite`."""

    run_id: str
    phase: str
    name: str
    key: str
    state: str
    idempotent: bool
    atomic: bool
    attempt: int
    retry_ok: bool
    intent_at: float
    prev_key: str | None
    reconcilable: bool
    redo_on_rewind: bool
    done_at: NotRequired[float | None]
    result_json: NotRequired[str | None]
    result_hash: NotRequired[str | None]
    confirmed_by: NotRequired[int | None]
    seal: NotRequired[str | None]
    reconcile_json: NotRequired[str | None]


class Effects:
    """Reads and writes of the effects table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """The run's effect records, oldest first, checked."""
        return _rowcheck.check_all(
            effects, conn.execute(select(effects).where(effects.c.run_id == run_id).order_by(effects.c.id))
        )

    def of_runs(self, conn: Connection, run_ids: Sequence[str]) -> dict[str, list[Any]]:
        """`of_run` of several runs in one query (verify reads a page at a time);
        runs without records are left out."""
        if not run_ids:
            return {}
        found: Iterable[Any]
        if self._db.is_sqlite:
            # Through the driver, by the run-id range (`ix_effects_run`); runs in the range but not asked for are left out below.
            where = "run_id >= ? AND run_id <= ? ORDER BY run_id, id"
            found = _EFFECTS.rows(driver(conn), where, (min(run_ids), max(run_ids)))
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

    def by_key(self, conn: Connection, key: str) -> Row[Any] | None:
        """The record with this key (checked), or None."""
        found = _rowcheck.check_all(effects, conn.execute(select(effects).where(effects.c.key == key)).fetchmany(1))
        return found[0] if found else None

    def add(self, conn: Connection, record: EffectColumns) -> None:
        """A new record (its history's end is moved apart: `note_last`, `set_history_end`)."""
        conn.execute(insert(effects).values(**record))

    def note_last(self, conn: Connection, run_id: str, key: str) -> None:
        """A new effect record ends the run's effect history (seals.py)."""
        conn.execute(
            update(runs).where(runs.c.run_id == run_id).values(effects_last=key, effects_count=runs.c.effects_count + 1)
        )

    def set_history_end(self, conn: Connection, run_id: str, last: str | None, count: int | None = None) -> None:
        """Where the run's effect history ends (`effects_last`), and with
        `count`, how many records it holds: a record written anew or the
        records linked again (seals.py)."""
        values: dict[str, Any] = {"effects_last": last}
        if count is not None:
            values["effects_count"] = count
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(**values))

    def rewrite(self, conn: Connection, record: EffectColumns) -> None:
        """The record with `record`'s key, as it now stands (an answer, an atomic effect's completion)."""
        conn.execute(update(effects).where(effects.c.key == record["key"]).values(**record))

    def relink(self, conn: Connection, key: str, prev_key: str | None, seal: str | None) -> None:
        """The record linked after `prev_key` and sealed anew (a repair)."""
        conn.execute(update(effects).where(effects.c.key == key).values(prev_key=prev_key, seal=seal))

    def set_reconcile(self, conn: Connection, key: str, shown: str) -> None:
        """What the record's reconcile hook last said (JSON, with when)."""
        conn.execute(update(effects).where(effects.c.key == key).values(reconcile_json=shown))
