"""What a start reads of a run's decisions before it plans: the rows, the
damage their sealed history shows, and which of them are the planner's to
carry out (the rest are read elsewhere: an answer by its question, a hold
by the start itself, a proposal only once it is seconded)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..history import trail, witness
from ..states import HOLDS, Action
from ..store.store import Store
from .planner import Pending


@dataclass(frozen=True)
class DecisionsRead:
    """A run's decisions as one start reads them."""

    rows: list[Any]
    """Every decision row of the run, oldest first."""
    damage: list[trail.Damage]
    """What their history (and the policy's, when a decision needs it) shows was changed."""
    reset_at: float
    """When the run was last reset (its epoch began): what it did before is no part of a replay."""
    pending: list[Pending]
    """The pending decisions the planner carries out or voids."""
    answers: list[int]
    """Pending answers, marked applied once the run goes on."""
    proposed: list[int]
    """Proposals waiting for a second operator, voided when the run goes on without them."""


def read(store: Store, run_id: str, distinct: trail.Distinct) -> DecisionsRead:
    """Read a run's decisions and check their history.

    Args:
        store: The store.
        run_id: The run.
        distinct: The one rule of "another operator" (oversight/identity.py), to check recorded seconds.

    Returns:
        The rows, their damage, and what the start does with them.
    """
    with store.read() as conn:
        rows = store.decisions.of_run(conn, run_id)
        run = store.runs.get(conn, run_id)
        decided = bool(rows) or (run is not None and (run.decisions_count or run.decisions_last is not None))
        policies = store.policy.changes(conn, limit=None) if decided else []
        policy_head = store.policy.head(conn) if decided else (None, None, None)
    # Decisions are history too: an edited, deleted or inserted decision,
    # or a state no recorded transition explains (an approval of a listed
    # action applied without a second), stops the run before anything
    # is applied (history/trail.py).
    damage: list[trail.Damage] = []
    if run is not None and decided:
        damage = trail.check_decisions(
            rows, run.decisions_last, run.decisions_count, policies, distinct, store.seal_key
        )
        # The run row's status and hold, against the sealed decisions (a
        # cancelled run stays cancelled whatever its row was edited to).
        damage += trail.run_row(run, rows)
        named = {int(d.policy_id) for d in rows if d.policy_id is not None}
        if any(d.state == "pending" for d in rows) or not named <= {int(p.id) for p in policies}:
            # What needed a second is the policy's to say: its history must
            # be whole too, and still hold every change this run's
            # decisions were fitted under (an older head restored, or the
            # whole policy deleted, leaves one named and gone).
            damage += witness.policy_damage(policies, *policy_head, store.seal_key, named, store.where)
    # A "second" is no decision to carry out: one pending is damage (trail.py), never applied.
    # An answer is read by its question (parking.py), and a hold is the
    # start's own (`_acquire`): neither is the planner's to apply or void.
    reset_at = max(
        (float(d.at) for d in rows if d.action == Action.RESET.value and d.state == "applied"),
        default=float("-inf"),
    )
    kept = {"second", Action.ANSWER.value, *(a.value for a in HOLDS)}
    return DecisionsRead(
        rows=rows,
        damage=damage,
        reset_at=reset_at,
        pending=[Pending.from_row(d) for d in rows if d.state == "pending" and d.action not in kept],
        answers=[int(d.id) for d in rows if d.state == "pending" and d.action == Action.ANSWER.value],
        # Proposals wait for a second operator and are never carried out here;
        # a run that goes on without them leaves nothing for them to answer.
        # Not so a proposed answer (its question is still open when the run
        # asks it again) or a pause or cancel (it fits a running run too):
        # their second is checked against the run as it is then (gate.py).
        proposed=[int(d.id) for d in rows if d.state == "proposed" and d.action not in kept],
    )
