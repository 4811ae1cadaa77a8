"""Claims: who is looking at a run, so two operators do not triage it at once.

A claim is a note to colleagues, not a lock: it expires on its own (the
claimer's `PHASEGATE_CLAIM_SECONDS`, two hours by default), and a decision by
someone else on a claimed run only needs to be meant (`--force`, or a typed
confirmation in the console). Every claim row is kept: a release or a
takeover fills its `released_*` columns, an expiry is its `expires_at`
passing with nothing released; `history` reads them back as the audit.
"""

from __future__ import annotations

from typing import Any

from ..errors import ClaimedByOther, UsageError
from ..store.store import Store
from ..timefmt import iso
from ..views.models import ClaimEvent, ClaimView
from .identity import Who, same_person

DEFAULT_CLAIM_SECONDS = 7200.0


def history(rows: list[Any], now: float) -> list[ClaimEvent]:
    """Claims, releases, takeovers and expiries of a run, oldest first."""
    out: list[ClaimEvent] = []
    for r in rows:
        out.append(ClaimEvent("claim", str(r.operator), str(r.account), iso(r.claimed_at), float(r.claimed_at)))
        if r.released_at is not None:
            took = r.released_by is not None and (r.released_by, r.released_account) != (r.operator, r.account)
            out.append(
                ClaimEvent(
                    "takeover" if took else "release",
                    str(r.released_by or r.operator),
                    str(r.released_account or r.account),
                    iso(r.released_at),
                    float(r.released_at),
                )
            )
        elif float(r.expires_at) <= now:
            out.append(ClaimEvent("expiry", str(r.operator), str(r.account), iso(r.expires_at), float(r.expires_at)))
    return sorted(out, key=lambda e: e.ts)


def in_force(rows: list[Any], now: float) -> ClaimView | None:
    """The claim in force among a run's claim rows (`Store.claims.current`'s rule)."""
    live = [r for r in rows if r.released_at is None and float(r.expires_at) > now]
    return ClaimView.from_row(live[-1]) if live else None


def check(claim: ClaimView | None, who: Who, run_id: str, *, override: bool, what: str) -> None:
    """The one rule for acting on a claimed run: the claimer acts freely;
    anyone else needs `override` (`--force`, a typed confirmation)."""
    if claim is None or override or same_person(Who(claim.operator, claim.account), who):
        return
    raise ClaimedByOther(
        f"run {run_id!r} is claimed by {claim.operator} (account {claim.account}) since {claim.claimed_at},"
        f" until {claim.expires_at}; {what} with --force to act anyway"
    )


def claim(
    store: Store, conn: Any, run_id: str, who: Who, now: float, *, seconds: float, release: bool, force: bool
) -> ClaimView | None:
    """Claim (or renew, or with `release` give up) the run, in the caller's
    transaction with the run's row locked. Someone else's claim is taken over
    or released only with `force`; returns the claim in force afterwards."""
    current = store.claims.current(conn, [run_id], now).get(run_id)
    mine = current is not None and same_person(Who(current.operator, current.account), who)
    if current is not None and not mine and not force:
        held = ClaimView.from_row(current)
        verb = "release" if release else "claim"
        check(held, who, run_id, override=False, what=f"{verb} it")
    if release and current is None:
        raise UsageError(f"run {run_id!r} is not claimed; nothing to release")
    if current is not None:
        store.claims.end(conn, int(current.id), at=now, by=who.operator, account=who.account)
    if release:
        return None
    store.claims.take(conn, run_id, who.operator, who.account, now, now + seconds)
    row = store.claims.current(conn, [run_id], now)[run_id]
    return ClaimView.from_row(row)
