"""The messages table (`phasegate_messages`, schema version 8): what was sent
into a run (`phasegate send`, `Engine.send`) for a phase's `ctx.recv(topic)`.

A message is recorded once and never deleted: sealed and linked into its
run's messages like a decision into its decisions (history/trail.py), so an
edited, inserted or re-ordered row is found before it is handed to a phase.
Its delivery (queued, delivered, or refused by the receiving phase's type)
is written by the run's own process on the hot path, in the transaction of
the durable step that receives it (`_hotpath.py`: `message_taken`), so a
message is taken exactly once. Every read is of one run's own rows, through
`ix_messages_run_topic`. A store opened read-only before its upgrade has no
table: then nothing was ever sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Row

from ..history import trail
from . import _rowcheck
from ._database import Database
from .schema import messages

#: A message's states: waiting in the run's queue, handed to a phase, or
#: refused by the type the receiving phase gave (kept, shown, never handed on).
QUEUED, DELIVERED, REFUSED = "queued", "delivered", "refused"


@dataclass(frozen=True, slots=True)
class NewMessage:
    """A message to record (`Messages.record`): its id, link and seal are the store's to give."""

    run_id: str
    """The run it is sent to."""
    topic: str
    """The topic a phase receives it on (`ctx.recv(topic)`)."""
    value_json: str
    """The value, as canonical JSON."""
    reason: str
    """Why it was sent, in the sender's words."""
    operator: str
    """Who sent it (the name shown)."""
    account: str
    """The operating-system account it came from."""
    at: float
    """When."""


class Messages:
    """Reads and writes of the messages table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def _present(self) -> bool:
        return "phasegate_messages" in self._db.tables

    def record(self, conn: Connection, new: NewMessage) -> int:
        """A new message row, queued, linked to the run's last message and sealed.

        Returns:
            Its id.
        """
        last = conn.execute(select(func.max(messages.c.id)).where(messages.c.run_id == new.run_id)).scalar()
        values: dict[str, Any] = {
            "run_id": new.run_id,
            "topic": new.topic,
            "value_json": new.value_json,
            "reason": new.reason,
            "operator": new.operator,
            "account": new.account,
            "at": new.at,
            "prev_id": int(last) if last is not None else None,
            "state": QUEUED,
        }
        mid = int(conn.execute(insert(messages).returning(messages.c.id), values).scalar_one())
        seal = trail.message_seal({**values, "id": mid}, self._db.seal_key)
        conn.execute(update(messages).where(messages.c.id == mid).values(seal=seal))
        return mid

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every message of the run, oldest first, checked."""
        if not self._present:
            return []
        q = select(messages).where(messages.c.run_id == run_id).order_by(messages.c.id)
        return _rowcheck.check_all(messages, conn.execute(q))

    def of_runs(self, conn: Connection, run_ids: list[str]) -> dict[str, list[Row[Any]]]:
        """The message rows of these runs, oldest first, by run (one query, for a page of `verify`)."""
        out: dict[str, list[Row[Any]]] = {}
        if not self._present or not run_ids:
            return out
        q = select(messages).where(messages.c.run_id.in_(run_ids)).order_by(messages.c.id)
        for r in _rowcheck.check_all(messages, conn.execute(q)):
            out.setdefault(str(r.run_id), []).append(r)
        return out

    def queued(self, conn: Connection, run_id: str, topic: str, *, limit: int | None = None) -> list[Row[Any]]:
        """The run's messages on `topic` not yet taken, oldest first, checked
        (the first `limit` only, when given: a receiver takes one at a time)."""
        if not self._present:
            return []
        q = (
            select(messages)
            .where(messages.c.run_id == run_id, messages.c.topic == topic, messages.c.state == QUEUED)
            .order_by(messages.c.id)
        )
        if limit is not None:
            q = q.limit(limit)
        return _rowcheck.check_all(messages, conn.execute(q))

    def has_queued(self, conn: Connection, run_id: str, topic: str) -> bool:
        """Whether a message on `topic` waits in the run's queue (one indexed look)."""
        if not self._present:
            return False
        q = (
            select(messages.c.id)
            .where(messages.c.run_id == run_id, messages.c.topic == topic, messages.c.state == QUEUED)
            .limit(1)
        )
        return conn.execute(q).first() is not None
