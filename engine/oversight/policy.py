"""The store-wide policy: which decisions need a second operator.

Kept in the store (`phasegate_policy`), one row per change, so no
operator's environment or flags can bypass it, and every change says who
(name and OS account), when and why. `phasegate policy --show` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .. import _json, bounds
from ..errors import DecisionError, UsageError
from ..history import trail, witness
from ..states import Action, ActionName
from ..store.store import NewPolicy, Store
from ..timefmt import iso
from .identity import Who

DEFAULT_PROPOSAL_SECONDS = 86400.0
"""A proposal nobody seconds lapses after a day, unless the policy says otherwise."""


@dataclass(frozen=True)
class Policy:
    """The policy in force (or one past change of it, in `--show`'s history)."""

    require_second: tuple[Action, ...] = ()
    """Actions a decision of which is only proposed until another operator seconds it."""
    proposal_seconds: float = DEFAULT_PROPOSAL_SECONDS
    """How long a proposal waits for its second before it lapses (default a day)."""
    web_account: str | None = None
    """The OS account of `phasegate serve`, whose sessions' authenticated users
    count as different operators (engine/oversight/identity.py)."""
    operator: str | None = None
    """Who made this change of the policy (None: never changed)."""
    account: str | None = None
    """Their OS account."""
    at: float | None = None
    """When (UNIX seconds)."""
    reason: str | None = None
    """Why, in their words."""
    id: int | None = None
    """The change's id (None: no policy was ever set); each decision records
    the one in force when it was made (`policy_id`)."""

    def needs_second(self, action: Action | ActionName) -> bool:
        """Whether a decision of `action` is only proposed until someone else seconds it.

        Args:
            action: The action, as an `Action` or its name.

        Returns:
            True when the policy lists it.
        """
        return str(action) in {str(a) for a in self.require_second}

    def to_json(self) -> dict[str, Any]:
        """The policy as `phasegate policy --json` prints it (without `history`).

        Returns:
            `require_second`, `proposal_seconds`, `web_account`, `changed_by`,
            `account`, `changed_at` and `reason`.
        """
        return {
            "require_second": [str(a) for a in self.require_second],
            "proposal_seconds": self.proposal_seconds,
            "web_account": self.web_account,
            "changed_by": self.operator,
            "account": self.account,
            "changed_at": iso(self.at),
            "reason": self.reason,
            "id": self.id,
        }

    @classmethod
    def from_row(cls, row: Any) -> Policy:
        """The policy from a row of `phasegate_policy`.

        Args:
            row: The row; an action name this engine does not know is left out.

        Returns:
            The policy.
        """
        names = _json.loads(row.require_second_json or "[]")
        acts = tuple(Action(n) for n in names if n in {a.value for a in Action})
        return cls(
            require_second=acts,
            proposal_seconds=float(row.proposal_seconds),
            web_account=row.web_account,
            operator=row.operator,
            account=row.account,
            at=row.at,
            reason=row.reason,
            id=int(row.id),
        )


def parse_actions(text: str) -> tuple[Action, ...]:
    """`reset,retry_effect,approve` -> the actions; an empty text clears the list."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = {a.value for a in Action}
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"--require-second: unknown action {bad[0]!r}; one of: {', '.join(a.value for a in Action)}")
    return tuple(Action(n) for n in dict.fromkeys(names))


def check_seconds(value: float) -> float:
    """A proposal's lapse, checked (`bounds.WAIT_SECONDS`: 1 s to a year).

    Args:
        value: Seconds a proposal waits for its second.

    Returns:
        `value`.

    Raises:
        UsageError: nan, infinite, or outside the range.
    """
    return bounds.WAIT_SECONDS.check(value, "--proposal-seconds")


def current(store: Store, conn: Any) -> Policy:
    rows = store.policy.changes(conn, limit=1)
    return Policy.from_row(rows[0]) if rows else Policy()


def history(store: Store, conn: Any, limit: int | None = 20, before: int | None = None) -> list[Policy]:
    """The policy's changes, newest first: at most `limit` (None: every one),
    older than change `before` (a keyset page)."""
    return [Policy.from_row(r) for r in store.policy.changes(conn, limit=limit, before=before)]


def damage(store: Store, conn: Any, changes: list[Any] | None = None) -> list[trail.Damage]:
    """How the policy's changes differ from their seals, links and count
    (history/trail.py): empty when its history is whole.

    Args:
        store: The store.
        conn: A transaction on it.
        changes: Every policy change, as `store.policy.changes(conn, limit=None)`
            read them in this transaction (a verify has them already); None: read here.

    Returns:
        The damage found.
    """
    if "phasegate_policy" not in store.tables:
        return []
    head, count, seal = store.policy.head(conn)
    named = store.decisions.policies_named(conn)
    rows = store.policy.changes(conn, limit=None) if changes is None else changes
    return witness.policy_damage(rows, head, count, seal, store.seal_key, named, store.where)


def check_whole(store: Store, conn: Any) -> None:
    """Refuse to decide under a policy whose history is damaged: which
    decisions need a second is exactly what a forger would change.

    Raises:
        DecisionError: the policy's history is damaged.
    """
    found = damage(store, conn)
    if found:
        raise DecisionError(
            f"the policy's history is damaged ({found[0].detail}); nothing was recorded: check it with"
            " `phasegate verify`, then record the policy anew (`phasegate policy --require-second ... --reason ...`)"
        )


def change(
    store: Store,
    conn: Any,
    who: Who,
    now: float,
    *,
    reason: str,
    require_second: tuple[Action, ...] | None = None,
    proposal_seconds: float | None = None,
    web_account: str | None = None,
) -> Policy:
    """Record a new policy: what is not given is kept from the one in force.
    `web_account` "" clears it."""
    if not reason or not reason.strip():
        raise UsageError("a policy change needs a reason (--reason TEXT)")
    if web_account and web_account == who.os_account:
        # Its authenticated users count as different people only because no
        # one has a shell of it: the account you type commands as is not one.
        raise UsageError(
            f"--web-account {web_account!r} is the account this command runs as; name the account"
            " `phasegate serve` runs under, one no operator uses for the command line"
        )
    if damage(store, conn):
        # An operator recording the policy vouches for its history as it
        # stands (the damage was reported by verify; this change is audited).
        store.policy.reseal(conn)
    old = current(store, conn)
    new = Policy(
        require_second=old.require_second if require_second is None else require_second,
        proposal_seconds=old.proposal_seconds if proposal_seconds is None else check_seconds(proposal_seconds),
        web_account=old.web_account if web_account is None else (web_account or None),
        operator=who.operator,
        account=who.account,
        at=now,
        reason=reason,
    )
    pid = store.policy.record(
        conn,
        NewPolicy(
            require_second_json=_json.dumps([str(a) for a in new.require_second]),
            proposal_seconds=new.proposal_seconds,
            web_account=new.web_account,
            operator=who.operator,
            account=who.account,
            at=now,
            reason=reason,
        ),
    )
    return replace(new, id=pid)
