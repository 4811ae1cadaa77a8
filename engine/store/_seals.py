"""Every sealed record of the store at once, for `phasegate reseal`
(upkeep/resealing.py): the checkpoints', effect records', decisions',
policy changes' and messages' rows read whole, and their `seal` columns written anew in one
statement a table. What a seal is, and whether one vouches, is history's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.engine import Connection, Row

from .schema import checkpoints, decisions, effects, messages, policy

#: The tables whose rows carry a seal.
SealedTable = Literal["checkpoints", "effects", "decisions", "policy", "messages"]

_TABLES: dict[SealedTable, Table] = {
    "checkpoints": checkpoints,
    "effects": effects,
    "decisions": decisions,
    "policy": policy,
    "messages": messages,
}


_NEWEST: dict[frozenset[str], Any] = {}
"""`Seals.newest`'s statement, built once for each set of tables a store has."""


class Seals:
    """Reads and writes of the sealed tables' rows, all of them (a reseal)."""

    def newest(self, conn: Connection, tables: set[str]) -> list[str]:
        """The seal of each sealed table's newest row (by id, on its primary
        key: one statement of four indexed reads): what says a store is keyed
        when its meta row no longer does (store.py). `tables`: the store's."""
        have = frozenset(t.name for t in _TABLES.values() if t.name in tables)
        if not have:
            return []
        q = _NEWEST.get(have)
        if q is None:
            q = _NEWEST[have] = select(
                *(
                    select(t.c.seal).order_by(t.c.id.desc()).limit(1).scalar_subquery()
                    for t in _TABLES.values()
                    if t.name in have
                )
            )
        return [str(s) for s in conn.execute(q).one() if s]

    def checkpoint_seals(self, conn: Connection) -> list[Row[Any]]:
        """Every checkpoint's `id`, `payload_hash` and `seal` (its payload is not read)."""
        return list(conn.execute(select(checkpoints.c.id, checkpoints.c.payload_hash, checkpoints.c.seal)))

    def rows(self, conn: Connection, table: Literal["effects", "decisions", "policy", "messages"]) -> list[Row[Any]]:
        """Every row of a sealed table, whole: a record's seal covers its columns."""
        return list(conn.execute(select(_TABLES[table])))

    def set_seals(self, conn: Connection, table: SealedTable, seals: Sequence[tuple[int, str | None]]) -> None:
        """Each (row id, new seal) written, in one statement."""
        if not seals:
            return
        t = _TABLES[table]
        conn.execute(
            update(t).where(t.c.id == bindparam("b_id")).values(seal=bindparam("b_seal")),
            [{"b_id": i, "b_seal": s} for i, s in seals],
        )
