"""Decisions and policy changes as part of the verified history.

A decision row says what a resume will do to a run (and a second says that
another person agreed); a policy row says which decisions needed that
agreement. Both are sealed and linked like effect records (seals.py): each
row carries a seal over every field a resume or a second depends on and the
id of the row written before it; each run row names its last decision and
counts them, the store's meta names the last policy change and counts them.
So an edited, deleted, inserted or re-ordered row is found, by `verify` and
by the start sequence before anything is applied.

A seal vouches for a row's bytes, not for what they claim. So a state no
recorded transition explains is damage too, whatever its seal: a decision
of an action its policy listed that is pending or applied without a second
row, naming it, from another operator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .. import _json
from ..assistants import assistant_of
from . import keys, seals

#: The decision fields a seal covers: action, state, proposer, second,
#: policy in force, batch and the values accepted (in `detail_json`).
DECISION_SEALED: tuple[str, ...] = (
    "id",
    "run_id",
    "action",
    "phase",
    "effect_key",
    "answers",
    "reason",
    "operator",
    "account",
    "at",
    "state",
    "expires_at",
    "seconded_by",
    "batch_id",
    "policy_id",
    "prev_id",
    "detail_json",
)

#: The policy fields a seal covers.
POLICY_SEALED: tuple[str, ...] = (
    "id",
    "require_second_json",
    "proposal_seconds",
    "web_account",
    "operator",
    "account",
    "at",
    "reason",
    "prev_id",
)

#: The message fields a seal covers (a message sent into a run, store/_messages.py):
#: what was sent, to which run and topic, by whom, and its place in the run's
#: messages. Its delivery is recorded by the step that received it, not here.
MESSAGE_SEALED: tuple[str, ...] = (
    "id",
    "run_id",
    "topic",
    "value_json",
    "reason",
    "operator",
    "account",
    "at",
    "prev_id",
)

Problem = Literal["edited", "missing", "not_in_history", "unsealed", "unexplained", "run_row"]

Distinct = Callable[[str, str, str, str, "str | None"], bool]
"""`(operator, account, other operator, other account, web account) -> bool`:
the one rule of "another operator" (oversight/identity.py), handed down."""


def _get(rec: Any, name: str) -> Any:
    if isinstance(rec, Mapping):
        return rec.get(name)
    return getattr(rec, name, None)


def _canonical(rec: Any, names: Sequence[str]) -> bytes:
    fields: list[Any] = []
    for n in names:
        v = _get(rec, n)
        if n in ("id", "seconded_by", "policy_id", "prev_id") and v is not None:
            v = int(v)
        elif n in ("at", "expires_at", "proposal_seconds") and v is not None:
            v = float(v)
        fields.append(v)
    return seals.canonical(fields)


def decision_seal(rec: Any, key: keys.SealKey | None) -> str:
    """The seal of a decision row as its fields are now, under the store's key."""
    return keys.digest(_canonical(rec, DECISION_SEALED), key)


def policy_seal(rec: Any, key: keys.SealKey | None) -> str:
    """The seal of a policy row as its fields are now, under the store's key."""
    return keys.digest(_canonical(rec, POLICY_SEALED), key)


def message_seal(rec: Any, key: keys.SealKey | None) -> str:
    """The seal of a message row as its fields are now, under the store's key."""
    return keys.digest(_canonical(rec, MESSAGE_SEALED), key)


def message_vouched(rec: Any, key: keys.SealKey | None) -> bool:
    """Whether a message row's seal vouches for its fields as they are now."""
    stored = _get(rec, "seal")
    return bool(stored) and seals.mismatch(stored, _canonical(rec, MESSAGE_SEALED), key) is None


def policy_head_seal(last: int | None, count: int | None, last_seal: str | None, key: keys.SealKey | None) -> str:
    """The seal of the policy's head: the newest change's id and seal and
    the count, as one (the store's meta keeps it beside them).

    Args:
        last: The id of the newest change (None: none yet).
        count: How many changes there are.
        last_seal: The newest change's own seal.
        key: The store's seal key.

    Returns:
        The seal text.
    """
    return keys.digest(seals.canonical(["policy head", last, count, last_seal]), key)


def decision_vouched(rec: Any, key: keys.SealKey | None) -> bool:
    """Whether a decision row's seal vouches for its fields as they are now."""
    stored = _get(rec, "seal")
    return bool(stored) and seals.mismatch(stored, _canonical(rec, DECISION_SEALED), key) is None


@dataclass(frozen=True)
class Damage:
    """One decision, policy or message row the verified history does not vouch for."""

    kind: Literal["decision", "policy", "message"]
    id: int | None
    """The row's id (None: rows deleted with nothing left that names them)."""
    problem: Problem
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {self.kind: self.id, "problem": self.problem, "detail": self.detail}


def _links(
    kind: Literal["decision", "policy", "message"],
    by_id: dict[int, Any],
    head: int | None,
    count: int | None,
    sealed: Sequence[str],
    key: keys.SealKey | None,
) -> list[Damage]:
    """Seals, the chain from `head` and the count: seals.check's rules over ids."""
    damage: list[Damage] = []
    for i, r in by_id.items():
        stored = _get(r, "seal")
        if not stored:
            damage.append(Damage(kind, i, "unsealed", f"{kind} {i} has no seal: not written by phasegate"))
        elif (why := seals.mismatch(stored, _canonical(r, sealed), key)) is not None:
            damage.append(Damage(kind, i, "edited", f"{kind} {i} {why}"))
    seen: set[int] = set()
    at: int | None = head
    after: int | None = None
    while at is not None:
        if at in seen:
            damage.append(Damage(kind, at, "edited", f"{kind} records loop back to {at}: re-ordered"))
            break
        rec = by_id.get(at)
        if rec is None:
            named_by = f"{kind} {after}" if after is not None else ("the run" if kind == "decision" else "the store")
            damage.append(Damage(kind, at, "missing", f"{kind} {at} was deleted ({named_by} names it)"))
            break
        seen.add(at)
        prev = _get(rec, "prev_id")
        at, after = (None if prev is None else int(prev)), at
    broken = any(d.problem == "missing" for d in damage)
    named = sum(1 for d in damage if d.problem == "missing")
    if count is not None and count - len(by_id) > named:
        lost = count - len(by_id) - named
        damage.append(Damage(kind, None, "missing", f"{lost} more {kind} record(s) were deleted"))
    if not broken:
        for i in by_id:
            if i not in seen and not any(d.id == i for d in damage):
                damage.append(Damage(kind, i, "not_in_history", f"{kind} {i} is not in the history: inserted"))
    return damage


def check_messages(rows: Iterable[Any], key: keys.SealKey | None) -> list[Damage]:
    """Every way a run's message rows differ from their seals and links (a
    message's link names the run's message before it): an edited, inserted,
    re-ordered or deleted row is found, a deleted newest one is not (the run
    row names no last message).

    Args:
        rows: The run's message rows, oldest first.
        key: The store's seal key (`Store.seal_key`).

    Returns:
        The damage found; empty when the messages are whole.
    """
    by_id = {int(r.id): r for r in rows}
    return _links("message", by_id, max(by_id) if by_id else None, None, MESSAGE_SEALED, key)


def check_policy(
    rows: Iterable[Any],
    head: int | None,
    count: int | None,
    head_seal: str | None,
    key: keys.SealKey | None,
    named: Iterable[int] = (),
) -> list[Damage]:
    """Every way the policy's changes differ from their seals, links and
    count, and the head (newest change and count) from its own seal: a
    deleted or re-ordered tail, with the meta's head moved back, is found.

    The head's seal vouches for a head phasegate wrote, not for the newest
    one: a copy of an earlier head, restored with the changes after it
    deleted (or the whole policy deleted, head and all), seals true. So the
    decisions anchor it: each names, under its own seal, the change it was
    fitted under, and a change a decision names must still be in the
    history the head reaches.

    Args:
        rows: Every policy row.
        head: The id of the last change, as the store's meta names it.
        count: How many changes the meta counts (None: not counted).
        head_seal: The head's seal, as the meta keeps it.
        key: The store's seal key (`Store.seal_key`).
        named: The changes decisions name (`Decisions.policies_named`, or a
            run's own rows' `policy_id`).

    Returns:
        The damage found; empty when the log is whole.
    """
    by_id = {int(r.id): r for r in rows}
    damage = _links("policy", by_id, head, count, POLICY_SEALED, key)
    gone = sorted({int(i) for i in named} - set(by_id))
    if gone:
        said = ", ".join(str(i) for i in gone[:5]) + (" ..." if len(gone) > 5 else "")
        damage.append(
            Damage(
                "policy",
                gone[-1],
                "missing",
                f"policy change(s) {said} named by sealed decisions are not in the policy's history"
                f" (its head names {head if head is not None else 'none'}): deleted, or an older head restored",
            )
        )
    if not by_id and not head and not count and not head_seal:
        return damage  # no policy was ever recorded
    newest = by_id.get(head) if head is not None else None
    data = seals.canonical(["policy head", head, count, _get(newest, "seal") if newest is not None else None])
    if not head_seal:
        damage.append(Damage("policy", head, "unsealed", "the policy's head (its newest change and count) has no seal"))
    elif (why := seals.mismatch(head_seal, data, key)) is not None:
        damage.append(
            Damage(
                "policy", head, "edited", f"the policy's head (its newest change and count) {why}: a change deleted?"
            )
        )
    return damage


def listed(policy_row: Any, action: str) -> bool:
    """Whether a policy row lists `action` as needing a second."""
    try:
        names = _json.loads(_get(policy_row, "require_second_json") or "[]")
    except ValueError:
        return True  # an unreadable list is read as the strictest one
    return isinstance(names, list) and action in names


def in_force(policies: Sequence[Any], decision: Any) -> Any | None:
    """The policy row a decision was made under: the one it names, or for a
    row from before decisions named one, the newest change made before it."""
    pid = _get(decision, "policy_id")
    if pid is not None:
        return next((p for p in policies if int(p.id) == int(pid)), None)
    at = float(_get(decision, "at") or 0.0)
    before = [p for p in policies if float(p.at) <= at]
    return max(before, key=lambda p: int(p.id)) if before else None


def check_decisions(
    rows: Iterable[Any],
    head: int | None,
    count: int | None,
    policies: Sequence[Any],
    distinct: Distinct,
    key: keys.SealKey | None,
) -> list[Damage]:
    """Every way a run's decision rows differ from their seals, links and
    count, and every state no recorded transition explains.

    Args:
        rows: The run's decision rows.
        head: The id of its last decision, as the run row names it.
        count: How many decisions the run row counts (None: not counted).
        policies: Every policy row (to know what each decision's policy listed).
        distinct: The one rule of "another operator".
        key: The store's seal key (`Store.seal_key`).

    Returns:
        The damage found; empty when the trail is whole.
    """
    by_id = {int(r.id): r for r in rows}
    damage = _links("decision", by_id, head, count, DECISION_SEALED, key)
    for i, r in by_id.items():
        why = unexplained(r, by_id, policies, distinct)
        if why is not None and not any(d.id == i for d in damage):
            damage.append(Damage("decision", i, "unexplained", f"decision {i} ({r.action}) {why}"))
    return damage


def unexplained(row: Any, by_id: Mapping[int, Any], policies: Sequence[Any], distinct: Distinct) -> str | None:
    """Why a decision's state is one no recorded transition leads to (None
    when one does): a decision of an action its policy listed may be pending
    or applied only with a second, naming it, from another operator.

    Args:
        row: The decision.
        by_id: The run's decision rows by id.
        policies: Every policy row.
        distinct: The one rule of "another operator".

    Returns:
        None, or the reason.
    """
    if row.action == "second":
        # A second is recorded applied, at once, and only so.
        return None if row.state == "applied" else f"is {row.state}; a second is only ever recorded applied"
    if row.state not in ("pending", "applied"):
        return None
    pol = in_force(policies, row)
    if pol is None and _get(row, "policy_id") is not None:
        return f"names policy {row.policy_id}, which is not in the policy's history"
    # An AI assistant's decision (`phasegate mcp`) is only ever proposed: it
    # needs a person's second whatever its policy listed.
    assistant = assistant_of(str(row.operator), _get(row, "account")) is not None
    if not assistant and (pol is None or not listed(pol, str(row.action))):
        return None
    sid = _get(row, "seconded_by")
    second = by_id.get(int(sid)) if sid is not None else None
    if second is None:
        if assistant:
            return f"is {row.state} without a second, though an AI assistant ({row.operator}) proposed it"
        return f"is {row.state} without a second, though policy {_get(pol, 'id')} lists {row.action}"
    try:
        named = _json.loads(second.detail_json or "{}").get("decision")
    except (ValueError, AttributeError):
        named = None
    if second.action != "second" or named != int(row.id):
        return f"names decision {second.id} as its second, which does not second it"
    # "Another operator" is what the policy in force when it was seconded said.
    at_second = in_force(policies, second) or pol
    if not distinct(str(row.operator), str(row.account or ""), str(second.operator), str(second.account or ""),
                    _get(at_second, "web_account")):  # fmt: skip
        return (
            f"was seconded by its own proposer's identity ({second.account}),"
            f" which policy {_get(at_second, 'id')} refuses"
        )
    return None


#: The holds a run row's `held_json` may record, and the state of the
#: decision each of its states rests on (run/holds.py).
_HOLD_STATES = {"asked": "pending", "in_force": "applied"}


def run_row(run: Any, rows: Sequence[Any]) -> list[Damage]:
    """Every way a run row's status and hold are not what its sealed
    decisions explain (the run row itself carries no seal, so its
    state-bearing columns are checked against the history that does):

    - an applied cancel makes a run cancelled for good, and a cancelled run
      rests on an applied cancel;
    - a paused run rests on an applied pause, and a run whose newest applied
      decision is a pause is paused;
    - a hold names a decision of the run's own, of its action, pending while
      it is asked and applied once in force.

    Args:
        run: The run row.
        rows: The run's decision rows (their seals checked by `check_decisions`).

    Returns:
        The damage found (kind decision, problem `run_row`); empty when the
        row is what the history says.
    """
    damage: list[Damage] = []
    status = str(_get(run, "status") or "")
    rid = _get(run, "run_id")

    def bad(i: int | None, why: str) -> None:
        damage.append(Damage("decision", i, "run_row", f"run {rid}'s row {why}: edited outside phasegate"))

    by_id = {int(r.id): r for r in rows}
    applied = [r for r in rows if r.state == "applied" and r.action != "second"]
    cancel = next((r for r in applied if r.action == "cancel"), None)
    if cancel is not None and status != "cancelled":
        bad(
            int(cancel.id), f"says {status}, but decision {cancel.id} (cancel) was applied and a cancelled run is final"
        )
    if status == "cancelled" and cancel is None:
        bad(None, "says cancelled, and no applied cancel decision explains it")
    newest = max(applied, key=lambda r: int(r.id), default=None)
    if newest is not None and newest.action == "pause" and status not in ("paused", "cancelled"):
        bad(int(newest.id), f"says {status}, but its newest applied decision ({newest.id}) is a pause")
    hold: Any = None
    text = _get(run, "held_json")
    if text:
        try:
            hold = _json.loads(text)
        except ValueError:
            hold = "unreadable"
        if not isinstance(hold, dict):
            bad(None, "holds a hold this engine did not write")
            hold = None
    if hold is not None:
        did, action, state = hold.get("decision"), hold.get("action"), hold.get("state")
        rests = by_id.get(did) if isinstance(did, int) and not isinstance(did, bool) else None
        want = _HOLD_STATES.get(str(state))
        if rests is None or rests.action != action or want is None or rests.state != want:
            bad(rests and int(rests.id), f"holds a {action} ({state}) that no decision of its own explains")
        elif state == "in_force" and status != ("paused" if action == "pause" else "cancelled"):
            bad(int(rests.id), f"says {status} under a {action} in force")
    elif status == "paused":
        bad(None, "says paused, and no hold names the pause it rests on")
    return damage
