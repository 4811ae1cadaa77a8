"""One cheap look at a store for `phasegate metrics`: runs by status and by
block kind, the oldest run needing a person, runs waiting for an answer,
workers alive and proposals unanswered.

Counts go through the status index (`count_by_status`, the rows of the runs
that may need someone); nothing reads a chain or an output.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import _json
from ..observe.gauges import StoreGauges
from ..states import RunStatus
from ..store import schema
from ..store.store import Store
from .listing import counts
from .workers import list_workers

#: Stored statuses that wait for a person, whatever else is true of the run.
NEEDS_PERSON = ("blocked", "failed")


def _waiting_kind(row: Any) -> str | None:
    """The kind of what a `waiting` run waits for (its `waiting_json`), None when unreadable."""
    try:
        got = _json.loads(getattr(row, "waiting_json", None) or "{}")
    except ValueError:
        return None
    kind = got.get("kind") if isinstance(got, dict) else None
    return kind if isinstance(kind, str) else None


def read(store: Store, now: float, clock: Any = None) -> StoreGauges:
    """The store-wide gauges, now.

    Runs waiting for an answer are the runs in status `waiting` whose
    `waiting_json` says `"kind": "answer"`; a store without that status or
    column has none.

    Args:
        store: The store.
        now: The time statuses and ages are judged at.
        clock: The clock workers' heartbeats are judged by (default: one that answers `now`).

    Returns:
        The gauges.
    """
    by_status = counts(store, now)
    has_waiting = "waiting_json" in schema.runs.c
    watched = list(NEEDS_PERSON) + (["waiting"] if has_waiting else [])
    with store.read() as conn:
        rows = store.runs.waiting_for_person(conn, watched)
        proposals = store.decisions.count_open_proposals(conn, now)
    kinds: Counter[str] = Counter()
    oldest: float | None = None
    asking = 0
    for r in rows:
        if r.status == "waiting":
            if _waiting_kind(r) != "answer":
                continue
            asking += 1
        if r.status == "blocked":
            try:
                reasons = _json.loads(r.blocked_json or "[]")
            except ValueError:
                reasons = []
            for k in {str(b.get("kind")) for b in reasons if isinstance(b, dict)}:
                kinds[k] += 1
        oldest = r.updated_at if oldest is None else min(oldest, r.updated_at)
    alive = sum(w.alive for w in list_workers(store, clock or (lambda: now)))
    return StoreGauges(
        runs_by_status=by_status,
        blocked_by_kind=dict(kinds),
        oldest_needing_person=max(0.0, now - oldest) if oldest is not None else 0.0,
        waiting_for_answer=asking,
        workers_alive=alive,
        proposals_unanswered=proposals,
    )


#: Every status, for gauges that read 0 rather than vanish (new statuses appear by themselves).
STATUSES = [s.value for s in RunStatus]
