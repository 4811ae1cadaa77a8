"""Writing operators' decisions down, in the caller's transaction.

The one place an operator's decision row is inserted and carried out:
`Engine.decide` for one run and `batch.decide` for a group call `record`
with decisions `fit` (and the claim and policy checks, `Engine._admit`) have
already accepted, so a decision of a group is recorded exactly as the same
decision taken alone, plus the batch id they share. `carry` is what a
decision that takes effect does to its run (`Engine.second` calls it too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _json
from ..oversight.identity import Who
from ..run import holds
from ..run.applying import apply_reset
from ..states import Action, RunStatus
from ..store.store import NewDecision, Store
from ..views.models import RunView
from ..views.status import PROPOSED
from .fit import Decision, Fit

Chosen = tuple[Any, RunView, Fit]
"""A run's row, its view, and the decision `fit` accepted for it."""


def record(
    store: Store,
    conn: Any,
    chosen: Sequence[Chosen],
    *,
    reason: str,
    who: Who,
    phase: str | None,
    now: float,
    state: str,
    expires_at: float | None = None,
    batch_id: str | None = None,
) -> list[Decision]:
    """Insert the decisions (in `state`: pending, applied for a reset, or
    proposed), then carry out the ones that take effect. A group's rows go
    in one statement and its runs are marked in one more: 300 runs cost a
    handful of statements, not a thousand."""
    # The policy in force, recorded with each decision (history/trail.py checks
    # a decision's state against what that policy listed).
    in_force = store.policy.changes(conn, limit=1)
    policy_id = int(in_force[0].id) if in_force else None
    rows = [
        NewDecision(
            run_id=view.run_id,
            action=fit.action.value,
            phase=phase,
            effect_key=fit.effect_key,
            answers=fit.answers.value if fit.answers else None,
            reason=str(reason),
            operator=who.operator,
            account=who.account,
            at=now,
            detail_json=_json.dumps(fit.detail),
            state=state,
            applied_at=now if state == "applied" else None,
            expires_at=expires_at,
            batch_id=batch_id,
            policy_id=policy_id,
        )
        for _run, view, fit in chosen
    ]
    ids = store.decisions.record_many(conn, rows)
    # A proposal changes nothing about the run yet: not its lease, not its
    # state, not why it stopped (the list and the detail say it waits, read
    # from the proposal itself, so they stop when it lapses).
    if state != PROPOSED:
        carry(
            store,
            conn,
            [(run, view, fit.action, i) for i, (run, view, fit) in zip(ids, chosen, strict=True)],
            who.operator,
            now,
            reason=str(reason),
        )
    return [
        Decision(i, view.run_id, fit.action, who.operator, reason, phase, fit.effect_key, state, batch_id)
        for i, (_run, view, fit) in zip(ids, chosen, strict=True)
    ]


def live(view: RunView) -> bool:
    """Whether the run's process holds it now (a hold is then asked of it, not applied)."""
    return view.lease is not None and view.lease.alive


def takes_effect_now(act: Action, view: RunView) -> bool:
    """Whether a decision is applied as it is recorded (state "applied"),
    not at the run's next start: a reset, an unpause, and a pause or cancel
    of a run no process holds."""
    if act in (Action.RESET, Action.UNPAUSE):
        return True
    return act in (Action.PAUSE, Action.CANCEL) and not live(view)


def carry(
    store: Store,
    conn: Any,
    items: Sequence[tuple[Any, RunView, Action, int]],
    who: str,
    now: float,
    *,
    reason: str,
) -> None:
    """What recording a decision that takes effect does to each run, in the
    recording transaction: the old holder's lease ends here (nothing it does
    after this can be recorded); a reset is applied at once; a pause or a
    cancel is applied at once, or asked of the process that runs it
    (run/holds.py); an answer wakes the run; any other decision marks the
    run decided."""
    marked: dict[str, list[str]] = {}
    for run, view, act, decision in items:
        damaged = _damaged_decisions(view)
        if damaged is not None:
            # A person decided on a run whose decision history is damaged: the
            # damaged decisions are never carried out, and the rest are sealed
            # anew, vouched for by this decision (history/trail.py).
            store.decisions.repair(conn, view.run_id, damaged, now)
        if act in (Action.PAUSE, Action.CANCEL):
            hold = holds.Hold(act, holds.ASKED, who, reason, now, decision, None)
            if live(view):
                holds.ask(store, conn, view.run_id, hold, now)
            else:
                holds.apply_now(store, conn, run, hold, now)
            continue
        if act is Action.UNPAUSE:
            holds.unpause(store, conn, run, now)
            continue
        if act is Action.ANSWER:
            if view.status is RunStatus.WAITING:
                # A worker takes it up now (a pending decision), and the phase is handed the answer.
                line = f"answered by {who}; a worker resumes it"
                store.runs.set_attention(conn, view.run_id, line, now)
            continue
        if act is Action.RESET:
            store.lease.revoke(conn, view.run_id)
            pending = [d.id for d in view.pending_decisions]
            apply_reset(store, conn, run, pending=pending, who=who, now=now)
            # What was proposed for the epoch a reset archives answers nothing
            # now (a reset being seconded is no longer "proposed" by this point).
            store.decisions.void_proposals(conn, [d.id for d in view.proposals], now)
        else:
            attention = f"decided: {act.value} by {who}; applies at the next run"
            marked.setdefault(attention, []).append(view.run_id)
    for attention, run_ids in marked.items():
        # The lease revoked as above, in the same statement as the mark.
        store.runs.mark_decided(conn, run_ids, attention, now)


def _damaged_decisions(view: RunView) -> list[int] | None:
    """The decisions an integrity block of the run names as damaged (None:
    its decision history is not damaged)."""
    ids: list[int] = []
    found = False
    for b in view.blocked:
        if b["kind"] != "integrity" or b.get("what") not in ("decision", "policy"):
            continue
        found = True
        did = b.get("decision")
        if b.get("what") == "decision" and did is not None:
            ids.append(int(did))
    return ids if found else None
