"""The runs list's orders, read a page at a time by keyset.

An operator's list of a million runs must cost the same on its last page as
on its first: every page is "the next `limit` rows after this key" in an
order an index already holds, never an OFFSET (which reads and drops every
row before it) and never a sort of the whole table.

The default order puts what needs a person first. Most of it is stored: each
run's `attention_rank` is kept where its status or its decisions change
(`RANKS`). Only "interrupted" depends on the time (a running run whose lease
has lapsed, or whose holder on this host is dead): those few runs are found
through the (status, lease_expires_at) index and merged into the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, literal, or_, select
from sqlalchemy.engine import Connection, Row

from .schema import decisions, runs

#: The attention order's ranks, by stored status (lowest first): what needs a
#: person; what was decided and waits to be carried out, or a reset waiting
#: to start over; live runs; the rest. A pending decision ranks a stopped run
#: PENDING_RANK; a running run is ranked LIVE_RANK while its holder lives and
#: as an interrupted run (NEEDS_PERSON, or PENDING_RANK) once it is gone.
NEEDS_PERSON, PENDING_RANK, LIVE_RANK, REST_RANK = 0, 1, 2, 3
RANKS: dict[str, int] = {"running": LIVE_RANK, "blocked": NEEDS_PERSON, "failed": NEEDS_PERSON, "reset": PENDING_RANK}


def stored_rank(status: str, pending: bool) -> int:
    """A run's stored `attention_rank` (the rule `rank_sql` writes in SQL)."""
    if status == "running":
        return LIVE_RANK
    return PENDING_RANK if pending else RANKS.get(status, REST_RANK)


def pending_exists() -> ColumnElement[bool]:
    """Whether the run of the outer row has a decision waiting to be carried out."""
    return (
        select(decisions.c.id).where(and_(decisions.c.run_id == runs.c.run_id, decisions.c.state == "pending")).exists()
    )


def rank_sql() -> ColumnElement[int]:
    """`stored_rank` of the row as it stands, in SQL (after its decisions changed)."""
    whens: list[Any] = [(runs.c.status == "running", LIVE_RANK), (pending_exists(), PENDING_RANK)]
    whens += [(runs.c.status == status, rank) for status, rank in RANKS.items() if status != "running"]
    return case(*whens, else_=REST_RANK)


def rank_for(status: str) -> ColumnElement[int] | int:
    """`stored_rank` of a row whose status an UPDATE is setting to `status`
    (its SET clause sees the old status, so the new one is given here)."""
    if status == "running":
        return LIVE_RANK
    return case((pending_exists(), PENDING_RANK), else_=RANKS.get(status, REST_RANK))


def gone_sql(now: float) -> ColumnElement[bool]:
    """A running run's lease is no one's, or lapsed: interrupted (or stalled),
    whatever its holder's host says. Read through (status, lease_expires_at)."""
    return or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at.is_(None), runs.c.lease_expires_at <= now)


def interrupted_rank(pending: bool) -> int:
    """Where an interrupted run sits in the attention order."""
    return PENDING_RANK if pending else NEEDS_PERSON


#: The sortable columns of the runs list besides attention; NULL sorts first
#: on every backend (PostgreSQL would put it last).
_COLUMNS: dict[str, ColumnElement[Any]] = {
    "run_id": runs.c.run_id,
    "workflow": runs.c.workflow,
    "status": runs.c.status,
    "frontier": runs.c.frontier_index,
    "last_checkpoint_at": func.coalesce(runs.c.last_checkpoint_at, literal(-1.0)),
}


@dataclass(frozen=True)
class Order:
    """An order of the runs list: its key columns, each ascending or not."""

    name: str
    """"attention", or a column name of `_COLUMNS` (unknown names sort by run id)."""
    descending: bool
    keys: tuple[tuple[ColumnElement[Any], bool], ...]

    @classmethod
    def parse(cls, order: str) -> Order:
        """ "attention", "workflow", ...; a "-" prefix reverses it."""
        name, desc = order.lstrip("-"), order.startswith("-")
        if name == "attention":
            keys: tuple[tuple[ColumnElement[Any], bool], ...] = (
                (runs.c.attention_rank, True),
                (runs.c.updated_at, False),
                (runs.c.run_id, True),
            )
        else:
            if name not in _COLUMNS:
                name = "run_id"
            keys = ((_COLUMNS[name], True), (runs.c.run_id, True)) if name != "run_id" else ((runs.c.run_id, True),)
        if desc:
            keys = tuple((col, not asc) for col, asc in keys)
        return cls(name, desc, keys)

    def key_of(self, row: Any, rank: int | None = None) -> tuple[Any, ...]:
        """A row's place in this order (`rank`: its effective attention rank)."""
        m = row._mapping
        if self.name == "attention":
            return (m["attention_rank"] if rank is None else rank, m["updated_at"], m["run_id"])
        if self.name == "last_checkpoint_at":
            v = m["last_checkpoint_at"]
            return (-1.0 if v is None else v, m["run_id"])
        if self.name == "frontier":
            return (m["frontier_index"], m["run_id"])
        if self.name == "run_id":
            return (m["run_id"],)
        return (m[self.name], m["run_id"])

    def sort_tuple(self, key: Sequence[Any]) -> tuple[Any, ...]:
        """A key made comparable in this order's direction, for merging in Python."""
        return tuple(
            _Desc(_sortable(v)) if not asc else _sortable(v) for v, (_c, asc) in zip(key, self.keys, strict=True)
        )


def _sortable(v: Any) -> tuple[Any, ...]:
    """A value as SQLite orders it, whatever its type (a damaged row may hold
    text where a time belongs): NULL, then numbers, then text, then bytes."""
    if v is None:
        return (0,)
    if isinstance(v, (int, float)):
        return (1, v)
    if isinstance(v, str):
        return (2, v)
    return (3, bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else repr(v))


class _Desc:
    """Reverses the comparison of the value it wraps."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Desc) -> bool:
        return bool(other.v < self.v)

    def __gt__(self, other: _Desc) -> bool:
        return bool(other.v > self.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and bool(self.v == other.v)

    def __hash__(self) -> int:
        return hash(self.v)


def keyset(
    conn: Connection,
    base: Select[Any],
    order: Order,
    *,
    after: Sequence[Any] | None,
    inclusive: bool,
    backward: bool,
    limit: int | None,
) -> list[Row[Any]]:
    """Up to `limit` rows of `base` after the key `after` (at or after it with
    `inclusive`), in `order`; with `backward`, the rows before it, nearest
    first; `limit` None reads them all. Each statement is an equality on a prefix of the key and a range
    on the next column, which an index on the key's columns answers by
    seeking, not by scanning the rows before it."""
    keys = tuple((col, asc != backward) for col, asc in order.keys)
    ordering = [col.asc() if asc else col.desc() for col, asc in keys]
    if after is None:
        return list(conn.execute(base.order_by(*ordering).limit(limit)))
    out: list[Row[Any]] = []
    # The rows after (v1, v2, v3) in lexicographic order: first those equal on
    # v1 and v2 and past v3, then those equal on v1 and past v2, then those past v1.
    for depth in range(len(keys) - 1, -1, -1):
        if limit is not None and len(out) >= limit:
            break
        conds = [col == after[i] for i, (col, _asc) in enumerate(keys[:depth])]
        col, asc = keys[depth]
        last = depth == len(keys) - 1
        if asc:
            conds.append(col >= after[depth] if (last and inclusive) else col > after[depth])
        else:
            conds.append(col <= after[depth] if (last and inclusive) else col < after[depth])
        q = base.where(and_(*conds)).order_by(*ordering).limit(None if limit is None else limit - len(out))
        out.extend(conn.execute(q))
    return out


def beyond(
    order: Order,
    rows: list[tuple[Row[Any], tuple[Any, ...]]],
    after: Sequence[Any] | None,
    *,
    inclusive: bool,
    backward: bool,
) -> list[tuple[Row[Any], tuple[Any, ...]]]:
    """The keyed rows that `keyset` would return after `after`, with no limit."""
    if after is None:
        return rows
    edge = order.sort_tuple(after)
    out = []
    for row, key in rows:
        at = order.sort_tuple(key)
        if at == edge:
            if inclusive:
                out.append((row, key))
        elif (at > edge) != backward:
            out.append((row, key))
    return out
