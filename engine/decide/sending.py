"""Sending a message into a run (`phasegate send RUN TOPIC`, `Engine.send`).

A message is recorded in the caller's transaction, with the run's row
locked: sealed and linked into the run's messages (store/_messages.py), with
who sent it (the same identity a decision records, oversight/identity.py).
It waits in the run's queue until a phase receives it (`ctx.recv`,
run/mailbox.py). A run parked on a `recv` of the topic is made due at once,
and a worker takes it up, as an answer wakes a run waiting on its question.

Which type a value must have. The run says it, not the sender: the JSON
Schema of the `schema=` a phase gave `ctx.recv` is recorded with its wait
(on the run row while it waits, and as the wait's own step) and with each
message it receives on the topic. `send` checks the value against the
newest of those, so a value the waiting phase would refuse is refused here,
with nothing recorded (exit 2). A message sent before the run ever waited on
the topic has no schema to meet yet: it is recorded, and if the phase's
type refuses it when it is received, it is kept as refused (shown, never
handed on) and the phase waits for the next one.

A completed or cancelled run takes no message (`MessageRefused`, exit 3).
A cancelled run's messages sent before it was cancelled are kept and shown,
and never delivered: nothing runs it again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._stop import damaged
from ..errors import MessageRefused
from ..oversight.identity import Who
from ..run.mailbox import RECV, RECV_WAIT, check_topic, wakes
from ..states import RunStatus
from ..store.store import NewMessage, Store
from .answers import meets_schema

#: The statuses whose runs take no message: nothing will ever receive it.
_OVER = frozenset({RunStatus.COMPLETED.value, RunStatus.CANCELLED.value})


@dataclass(frozen=True)
class Sent:
    """A message as `send` recorded it."""

    id: int
    """Its id (the store's)."""
    run_id: str
    """The run it was sent to."""
    topic: str
    """Its topic."""
    operator: str
    """Who sent it."""
    woke: bool
    """Whether the run was parked on this topic and is now due (a worker takes it up)."""
    checked: bool
    """Whether the value was checked against a schema the run recorded for the topic."""


def topic_schema(run: Any, steps: Callable[[], list[Any]], topic: str) -> tuple[bool, dict[str, Any] | None]:
    """The JSON Schema the run said a message on `topic` must meet, newest first:
    its wait now, else the last wait or receipt on the topic its steps recorded.

    Args:
        run: The run's row.
        steps: Its steps (not discarded), oldest first: read only when the
            run is not waiting on the topic now.
        topic: The topic.

    Returns:
        (known, schema): known False when the run never waited on the topic
        (then any JSON value is taken); schema None for "any JSON value".
    """
    waiting = _waiting(run)
    if run.status == RunStatus.WAITING.value and wakes(waiting, topic):
        assert waiting is not None
        return True, _schema(waiting.get("schema"))
    names = (RECV + topic, RECV_WAIT + topic)
    for st in reversed(steps()):
        key = str(st.step_key)
        if not any(key == n or key.startswith(n + "#") for n in names) or damaged(st.result_json, st.result_hash):
            continue  # a damaged record says nothing (the run blocks on it when it reads it)
        try:
            rec = _json.loads(st.result_json)
        except ValueError:
            continue
        if isinstance(rec, dict) and "schema" in rec:
            return True, _schema(rec.get("schema"))
    return False, None


def send(store: Store, conn: Any, run: Any, topic: str, value: Any, *, reason: str, who: Who, now: float) -> Sent:
    """Record a message for the run (its row locked by the caller), and wake
    the run when it is parked on the topic.

    Args:
        store: The store.
        conn: The write transaction.
        run: The run's row, locked.
        topic: The topic.
        value: The value (JSON data).
        reason: Why, in the sender's words.
        who: Who sends it.
        now: When.

    Returns:
        The message as recorded.

    Raises:
        UsageError: a bad topic, or a value that is not JSON or that the
            topic's recorded schema refuses (nothing recorded).
        MessageRefused: the run is completed or cancelled.
        DecisionError: the run's recorded schema cannot check a value.
    """
    check_topic(topic)
    if run.status in _OVER:
        raise MessageRefused(f"run {run.run_id!r} is {run.status}: it receives no more messages; nothing was recorded")
    known, schema = topic_schema(run, lambda: list(store.steps.of_run(conn, run.run_id)), topic)
    plain = meets_schema(f"message on topic {topic!r}", schema, value)
    mid = store.messages.record(
        conn,
        NewMessage(
            run_id=run.run_id,
            topic=topic,
            value_json=_json.dumps(plain),
            reason=str(reason),
            operator=who.operator,
            account=who.account,
            at=now,
        ),
    )
    woke = run.status == RunStatus.WAITING.value and wakes(_waiting(run), topic)
    if woke:
        store.runs.wake_now(conn, run.run_id, f"message on {topic} from {who.operator}; a worker resumes it", now)
    return Sent(mid, str(run.run_id), topic, who.operator, woke, known)


def _waiting(run: Any) -> dict[str, Any] | None:
    text = getattr(run, "waiting_json", None)
    if not text:
        return None
    try:
        w = _json.loads(text)
    except ValueError:
        return None
    return w if isinstance(w, dict) else None


def _schema(s: Any) -> dict[str, Any] | None:
    return s if isinstance(s, dict) else None
