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
from ..run.lease import HolderState, holder_state
from ..states import RunStatus, WaitKind
from ..store import schema
from ..store.store import Store
from .listing import counts
from .workers import list_workers

#: Seconds past its wake time after which a waiting run's timer is overdue.
OVERDUE_AFTER = 60.0
#: The most ready runs counted (`phasegate_runs_ready` reads a page, not the table).
READY_LIMIT = 1000

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
        ready = store.runs.waiting(conn, now, limit=READY_LIMIT)
    kinds: Counter[str] = Counter()
    oldest: float | None = None
    asking = overdue = 0
    waiting_since: dict[str, float] = {}
    for r in rows:
        if r.status == "waiting":
            kind = _waiting_kind(r) or "other"
            waiting_since[kind] = min(waiting_since.get(kind, r.updated_at), r.updated_at)
            wake = getattr(r, "wake_at", None)
            if kind != WaitKind.ANSWER.value and wake is not None and wake <= now - OVERDUE_AFTER:
                overdue += 1
            if kind != WaitKind.ANSWER.value:
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
    workers = list_workers(store, clock or (lambda: now))
    alive = sum(w.alive for w in workers)
    ready_n = sum(
        1
        for r in ready
        if r.status != RunStatus.RUNNING.value or holder_state(r, now) not in (HolderState.LIVE, HolderState.STALLED)
    )
    return StoreGauges(
        oldest_waiting_by_kind={k: max(0.0, now - t) for k, t in waiting_since.items()},
        timers_overdue=overdue,
        heartbeat_age_by_worker={w.worker_id: w.seen_ago for w in workers if w.state != "stopped"},
        runs_ready=ready_n,
        workers_busy=sum(1 for w in workers if w.alive and w.resuming),
        runs_by_status=by_status,
        blocked_by_kind=dict(kinds),
        oldest_needing_person=max(0.0, now - oldest) if oldest is not None else 0.0,
        waiting_for_answer=asking,
        workers_alive=alive,
        proposals_unanswered=proposals,
    )


#: Every status, for gauges that read 0 rather than vanish (new statuses appear by themselves).
STATUSES = [s.value for s in RunStatus]
