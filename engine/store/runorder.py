"""The orders of the runs list, as rules on a row: which runs come first.

The SQL that reads a page in these orders is in store/_paging.py; this
module holds what both it and `phasegate status` (which reads the runs
without SQLAlchemy, see quickstatus.py) must agree on.

The default order puts what needs a person first. Most of it is stored: each
run's `attention_rank` is kept where its status or its decisions change
(`stored_rank`). Only "interrupted" depends on the time (a running run whose
lease has lapsed, or whose holder on this host is dead), so an interrupted
run's place (`interrupted_rank`) is worked out when the list is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: The attention order's ranks, lowest first: what needs a person; what was
#: decided and waits to be carried out, or a reset waiting to start over; live
#: runs; the rest.
NEEDS_PERSON, PENDING_RANK, LIVE_RANK, REST_RANK = 0, 1, 2, 3
#: By stored status. A pending decision ranks a stopped run PENDING_RANK; a
#: running run is LIVE_RANK while its holder lives, and once it is gone
#: `interrupted_rank`.
#: A waiting run's rank is its kind's: a question needs a person, a timer
#: does not (it sorts with the live runs). A paused run waits for an operator
#: to let it go on; a cancelled one is over.
RANKS: dict[str, int] = {
    "running": LIVE_RANK,
    "blocked": NEEDS_PERSON,
    "failed": NEEDS_PERSON,
    "reset": PENDING_RANK,
    "waiting": LIVE_RANK,
    "paused": PENDING_RANK,
}
#: How a waiting run's `waiting_json` begins when it waits for an answer
#: (run/parking.py writes "kind" first): the SQL rank reads it so.
ASKING_PREFIX = '{"kind":"answer"'


def stored_rank(status: str, pending: bool, asking: bool = False) -> int:
    """A run's stored `attention_rank` (`asking`: a waiting run's question is open)."""
    if status == "running":
        return LIVE_RANK
    if pending:
        return PENDING_RANK
    if status == "waiting" and asking:
        return NEEDS_PERSON
    return RANKS.get(status, REST_RANK)


def interrupted_rank(pending: bool) -> int:
    """Where an interrupted run sits in the attention order."""
    return PENDING_RANK if pending else NEEDS_PERSON


#: The sortable columns besides attention, by order name.
COLUMNS: tuple[str, ...] = ("run_id", "workflow", "status", "frontier", "last_checkpoint_at")


@dataclass(frozen=True)
class Order:
    """An order of the runs list: "attention" or a column, maybe reversed."""

    name: str
    descending: bool

    @classmethod
    def parse(cls, order: str) -> Order:
        """ "attention", "workflow", ...; a "-" prefix reverses it; an
        unknown name sorts by run id."""
        name, desc = order.lstrip("-"), order.startswith("-")
        if name != "attention" and name not in COLUMNS:
            name = "run_id"
        return cls(name, desc)

    @property
    def ascending(self) -> tuple[bool, ...]:
        """Each key part's direction: attention is rank up, newest change
        first, run id up; a column is itself, then run id, both up."""
        if self.name == "attention":
            parts: tuple[bool, ...] = (True, False, True)
        elif self.name == "run_id":
            parts = (True,)
        else:
            parts = (True, True)
        return tuple(a != self.descending for a in parts)

    def key_of(self, row: Any, rank: int | None = None) -> tuple[Any, ...]:
        """A row's place in this order (`rank`: its attention rank, when it
        is not the stored one). A missing last checkpoint sorts first."""
        m = row._mapping
        if self.name == "attention":
            return (m["attention_rank"] if rank is None else rank, m["updated_at"], m["run_id"])
        if self.name == "run_id":
            return (m["run_id"],)
        if self.name == "last_checkpoint_at":
            v = m["last_checkpoint_at"]
            return (-1.0 if v is None else v, m["run_id"])
        col = "frontier_index" if self.name == "frontier" else self.name
        return (m[col], m["run_id"])

    def sort_tuple(self, key: Sequence[Any]) -> tuple[Any, ...]:
        """A key made comparable in this order's direction, to sort in Python."""
        return tuple(_sortable(v) if asc else _Desc(_sortable(v)) for v, asc in zip(key, self.ascending, strict=True))


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


def beyond(
    order: Order,
    rows: list[tuple[Any, tuple[Any, ...]]],
    after: Sequence[Any] | None,
    *,
    inclusive: bool,
    backward: bool,
) -> list[tuple[Any, tuple[Any, ...]]]:
    """The keyed rows past `after` in `order` (before it with `backward`;
    its own with `inclusive`)."""
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
