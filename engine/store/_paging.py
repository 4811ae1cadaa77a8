"""Reading the runs list a page at a time by keyset, in the orders of
runorder.py.

An operator's list of a million runs must cost the same on its last page as
on its first: every page is "the next `limit` rows after this key" in an
order an index already holds (`ix_runs_rank` for attention), never an
OFFSET (which reads and drops every row before it) and never a sort of the
whole table. The runs whose attention depends on the time (interrupted) are
found through (status, lease_expires_at) and merged into the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, literal, or_, select
from sqlalchemy.engine import Connection, Row

from .runorder import ASKING_PREFIX, LIVE_RANK, NEEDS_PERSON, PENDING_RANK, RANKS, REST_RANK, Order, stored_rank
from .schema import decisions, runs


def pending_exists() -> ColumnElement[bool]:
    """Whether the run of the outer row has a decision waiting to be carried out."""
    return (
        select(decisions.c.id).where(and_(decisions.c.run_id == runs.c.run_id, decisions.c.state == "pending")).exists()
    )


def rank_sql() -> ColumnElement[int]:
    """`runorder.stored_rank` of the row as it stands, in SQL (after its decisions changed)."""
    whens: list[Any] = [(runs.c.status == "running", LIVE_RANK), (pending_exists(), PENDING_RANK)]
    whens.append((and_(runs.c.status == "waiting", runs.c.waiting_json.startswith(ASKING_PREFIX)), NEEDS_PERSON))
    whens += [(runs.c.status == status, rank) for status, rank in RANKS.items() if status != "running"]
    return case(*whens, else_=REST_RANK)


def rank_for(status: str, waiting_json: str | None = None) -> ColumnElement[int] | int:
    """`runorder.stored_rank` of a row whose status an UPDATE is setting to
    `status` (its SET clause sees the old status, so the new one is given
    here, and for a waiting run what it waits for)."""
    if status == "running":
        return LIVE_RANK
    asking = status == "waiting" and (waiting_json or "").startswith(ASKING_PREFIX)
    return case((pending_exists(), PENDING_RANK), else_=stored_rank(status, False, asking))


def gone_sql(now: float) -> ColumnElement[bool]:
    """A running run's lease is no one's, or lapsed: interrupted (or stalled),
    whatever its holder's host says. Read through (status, lease_expires_at)."""
    return or_(runs.c.lease_owner.is_(None), runs.c.lease_expires_at.is_(None), runs.c.lease_expires_at <= now)


#: The SQL of each order's key parts (`Order.key_of` in Python). NULL sorts
#: first on every backend (PostgreSQL would put it last).
_COLUMNS: dict[str, tuple[ColumnElement[Any], ...]] = {
    "attention": (runs.c.attention_rank, runs.c.updated_at, runs.c.run_id),
    "run_id": (runs.c.run_id,),
    "workflow": (runs.c.workflow, runs.c.run_id),
    "status": (runs.c.status, runs.c.run_id),
    "frontier": (runs.c.frontier_index, runs.c.run_id),
    "last_checkpoint_at": (func.coalesce(runs.c.last_checkpoint_at, literal(-1.0)), runs.c.run_id),
}


#: Orders an index holds: `ix_runs_rank`, and the primary key.
_INDEXED = frozenset({"attention", "run_id"})


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
    first; `limit` None reads them all. Each statement is an equality on a
    prefix of the key and a range on the next column, which an index on the
    key's columns answers by seeking, not by scanning the rows before it."""
    keys = tuple((col, asc != backward) for col, asc in zip(_COLUMNS[order.name], order.ascending, strict=True))
    ordering = [col.asc() if asc else col.desc() for col, asc in keys]

    def page(q: Select[Any], n: int | None) -> list[Row[Any]]:
        if order.name in _INDEXED or n is None:
            return list(conn.execute(q.order_by(*ordering).limit(n)))
        # No index holds this order (its columns change at every checkpoint,
        # where an index would cost each commit): the sort keeps run ids
        # only, and the page's rows are read by id. Sorting whole rows made
        # the last page of a million runs cost four first pages.
        ids = q.with_only_columns(runs.c.run_id).order_by(*ordering).limit(n)
        return list(conn.execute(q.where(runs.c.run_id.in_(ids)).order_by(*ordering)))

    if after is None:
        return page(base, limit)
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
        out.extend(page(base.where(and_(*conds)), None if limit is None else limit - len(out)))
    return out
