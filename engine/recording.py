"""Writing operators' decisions down, in the caller's transaction.

The one place an operator's decision row is inserted: `Engine.decide` for
one run and `batch.decide` for a group call it with decisions `fit` has
already accepted, so a decision of a group is recorded exactly as the same
decision taken alone (plus the batch id they share).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _json
from ._states import Action
from .applying import apply_reset
from .decisions import Decision, Fit
from .store.store import LEASE_CLEARED, Store
from .views import RunView

Chosen = tuple[Any, RunView, Fit]
"""A run's row, its view, and the decision `fit` accepted for it."""


def record(
    store: Store,
    conn: Any,
    chosen: Sequence[Chosen],
    *,
    reason: str,
    who: str,
    phase: str | None,
    now: float,
    batch_id: str | None = None,
) -> list[Decision]:
    """Insert the decisions, end each run's lease, and apply a reset now (it
    archives the state) or mark each run decided. A group's rows go in one
    statement and its runs are marked in one more: 300 runs cost a handful
    of statements, not a thousand."""
    rows: list[dict[str, Any]] = []
    for _run, view, fit in chosen:
        act = fit.action
        state = "applied" if act is Action.RESET else "pending"
        rows.append(
            {
                "run_id": view.run_id,
                "action": act.value,
                "phase": phase,
                "effect_key": fit.effect_key,
                "answers": fit.answers.value if fit.answers else None,
                "reason": str(reason),
                "operator": who,
                "at": now,
                "detail_json": _json.dumps(fit.detail),
                "state": state,
                "applied_at": now if state == "applied" else None,
                "batch_id": batch_id,
            }
        )
    ids = store.insert_decisions(conn, rows)
    marked: dict[str, list[str]] = {}
    for run, view, fit in chosen:
        if fit.action is Action.RESET:
            # A decision changes what the run may do: the old holder's lease
            # ends here, so nothing it does after this can be recorded.
            store.revoke_lease(conn, view.run_id)
            pending = [d.id for d in view.pending_decisions]
            apply_reset(store, conn, run, pending=pending, who=who, now=now)
        else:
            attention = f"decided: {fit.action.value} by {who}; applies at the next run"
            marked.setdefault(attention, []).append(view.run_id)
    for attention, run_ids in marked.items():
        # The lease revoked as above, in the same statement as the mark.
        store.update_runs(conn, run_ids, {**LEASE_CLEARED, "updated_at": now, "attention": attention})
    return [
        Decision(i, view.run_id, fit.action, who, reason, phase, fit.effect_key, row["state"], batch_id)
        for i, (_run, view, fit), row in zip(ids, chosen, rows, strict=True)
    ]
