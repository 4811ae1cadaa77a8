"""One stop of one run, named: the key a watch's alert row is stored under
(alerts/watch.py), and what `prune` compares an alert row with to know that
its stop is over (upkeep/pruning.py)."""

from __future__ import annotations

import hashlib
from typing import Any

from .. import _json


def stop_key(row: Any) -> str:
    """One stop of one run. The attempt that ended in it is told apart by its
    last heartbeat (every start takes a new one; an operator's decision or a
    prune does not touch it), and the status and block kinds say which stop:
    a run that stops again after a resume is a new stop, a decision recorded
    on a stopped run is not."""
    topic = awaiting(row)
    if topic is not None:
        # A message wait is one stop however often the run is woken and parks
        # on it again: named by its topic, its phase and when the wait began.
        waited: list[Any] = [row.run_id, "message", int(row.epoch), topic.get("phase"), topic.get("topic")]
        return hashlib.sha256(_json.dumps([*waited, topic.get("since")]).encode()).hexdigest()[:32]
    question = asking(row)
    if question is not None:
        # A question is one stop however often the run is resumed early and
        # parks on it again: named by the question and when it was asked.
        ident: list[Any] = [row.run_id, "question", int(row.epoch), question.get("name"), question.get("asked_at")]
        return hashlib.sha256(_json.dumps(ident).encode()).hexdigest()[:32]
    kinds = sorted(str(b.get("kind")) for b in _json.loads(row.blocked_json or "[]"))
    ident = [row.run_id, row.status, int(row.epoch), row.heartbeat_at or row.created_at, kinds]
    return hashlib.sha256(_json.dumps(ident).encode()).hexdigest()[:32]


def asking(row: Any) -> dict[str, Any] | None:
    """The question a waiting run's row says it waits for a person to answer, or None.

    Args:
        row: A checked run row (its `waiting_json` is an object or NULL).

    Returns:
        The stored question (name, phase, prompt, ...), as stored.
    """
    if getattr(row, "status", None) != "waiting" or not getattr(row, "waiting_json", None):
        return None
    w = _json.loads(row.waiting_json)
    q = w.get("question") if isinstance(w, dict) and w.get("kind") == "answer" else None
    return q if isinstance(q, dict) else None


def awaiting(row: Any) -> dict[str, Any] | None:
    """The message wait a waiting run's row records (`ctx.recv`), or None.

    Args:
        row: A checked run row (its `waiting_json` is an object or NULL).

    Returns:
        The stored wait (kind, phase, topic, schema, since, until), as stored.
    """
    if getattr(row, "status", None) != "waiting" or not getattr(row, "waiting_json", None):
        return None
    w = _json.loads(row.waiting_json)
    return w if isinstance(w, dict) and w.get("kind") == "message" else None
