"""Writing an operator's decision down, in the caller's transaction.

The one place an operator's decision row is inserted: `Engine.decide` for
one run and `batch.decide` for a group call it with a decision `fit` has
already accepted, so a decision of a group is recorded exactly as the same
decision taken alone (plus the batch id they share).
"""

from __future__ import annotations

from typing import Any

from . import _json
from ._states import Action
from .applying import apply_reset
from .decisions import Decision, Fit
from .store.store import Store
from .views import RunView


def record(
    store: Store,
    conn: Any,
    run: Any,
    view: RunView,
    chosen: Fit,
    *,
    reason: str,
    who: str,
    phase: str | None,
    now: float,
    batch_id: str | None = None,
) -> Decision:
    """Insert the decision, end the run's lease, and apply it now if it is a
    reset (it archives the state) or mark the run decided otherwise."""
    act = chosen.action
    run_id = view.run_id
    state = "applied" if act is Action.RESET else "pending"
    values: dict[str, Any] = {
        "run_id": run_id,
        "action": act.value,
        "phase": phase,
        "effect_key": chosen.effect_key,
        "answers": chosen.answers.value if chosen.answers else None,
        "reason": str(reason),
        "operator": who,
        "at": now,
        "detail_json": _json.dumps(chosen.detail),
        "state": state,
        **({"applied_at": now} if state == "applied" else {}),
    }
    if batch_id is not None:
        values["batch_id"] = batch_id
    decision_id = store.insert_decision(conn, values)
    # A decision changes what the run may do: the old holder's lease
    # ends here, so nothing it does after this can be recorded.
    store.revoke_lease(conn, run_id)
    if act is Action.RESET:
        pending = [d.id for d in view.pending_decisions]
        apply_reset(store, conn, run, pending=pending, who=who, now=now)
    else:
        attention = f"decided: {act.value} by {who}; applies at the next run"
        store.update_run(conn, run_id, {"updated_at": now, "attention": attention})
    return Decision(decision_id, run_id, act, who, reason, phase, chosen.effect_key, state, batch_id)
