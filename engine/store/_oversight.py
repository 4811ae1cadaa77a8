"""The tables of oversight (schema version 4): claims (`phasegate_claims`:
an operator's hold on a run, in force until released or expired) and the
policy (`phasegate_policy`: its changes, newest in force). A store opened
read-only before its upgrade may lack them: then nothing is claimed and no
policy was ever set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, Row

from ..history import trail, witness
from . import _rowcheck
from ._database import Database
from ._meta import POLICY_COUNT, POLICY_HEAD, POLICY_LAST, Meta
from .schema import claims, policy


class Claims:
    """Reads and writes of the claims table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def current(self, conn: Connection, run_ids: Sequence[str] | None, now: float) -> dict[str, Row[Any]]:
        """The claim in force on each of these runs (one query for a page of
        the runs list, by its run ids; the runs query itself is left alone).
        `None`: on every run (the whole list, `phasegate status`: claims in
        force are few, and every run id as a parameter would not be)."""
        if "phasegate_claims" not in self._db.tables or (run_ids is not None and not run_ids):
            return {}
        q = select(claims).where(claims.c.released_at.is_(None), claims.c.expires_at > now).order_by(claims.c.id)
        if run_ids is not None:
            q = q.where(claims.c.run_id.in_(list(run_ids)))
        return {r.run_id: r for r in _rowcheck.check_all(claims, conn.execute(q))}

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every claim row of a run, oldest first (its claim audit)."""
        if "phasegate_claims" not in self._db.tables:
            return []
        q = select(claims).where(claims.c.run_id == run_id).order_by(claims.c.id)
        return _rowcheck.check_all(claims, conn.execute(q))

    def take(self, conn: Connection, run_id: str, operator: str, account: str, at: float, expires_at: float) -> None:
        """A new claim of the run by `operator` of `account`, from `at` until `expires_at`."""
        conn.execute(
            insert(claims).values(
                run_id=run_id, operator=operator, account=account, claimed_at=at, expires_at=expires_at
            )
        )

    def end(self, conn: Connection, claim_id: int, *, at: float, by: str, account: str) -> None:
        """Release the claim at `at`, by operator `by` of `account`."""
        conn.execute(
            update(claims)
            .where(claims.c.id == claim_id)
            .values(released_at=at, released_by=by, released_account=account)
        )


@dataclass(frozen=True, slots=True)
class NewPolicy:
    """A change of the policy to record (`PolicyChanges.record`); its id,
    link and seal are the store's to give."""

    require_second_json: str
    """The actions that need a second operator, as a JSON list."""
    proposal_seconds: float
    """How long a proposal waits for its second."""
    web_account: str | None
    """The account the web console's server runs as, if any."""
    operator: str
    """Who changed it."""
    account: str
    """From which operating-system account."""
    at: float
    """When."""
    reason: str
    """Why."""


class PolicyChanges:
    """Reads and writes of the policy table, each change sealed and linked to
    the one before it; the meta's `policy_last` names the newest and
    `policy_count` counts them (history/trail.py)."""

    def __init__(self, db: Database, meta: Meta) -> None:
        self._db = db
        self._meta = meta

    def changes(self, conn: Connection, limit: int | None = 20, before: int | None = None) -> list[Row[Any]]:
        """The policy's changes, newest first (the first is in force): at most
        `limit` (None: all), those older than change `before` (a keyset page)."""
        if "phasegate_policy" not in self._db.tables:
            return []
        q = select(policy).order_by(policy.c.id.desc())
        if before is not None:
            q = q.where(policy.c.id < before)
        if limit is not None:
            q = q.limit(limit)
        return _rowcheck.check_all(policy, conn.execute(q))

    def head(self, conn: Connection) -> tuple[int | None, int | None, str | None]:
        """The id of the newest change as the meta names it, the count, and
        the seal over both (`trail.policy_head_seal`)."""
        got = self._meta.several(conn, (POLICY_LAST, POLICY_COUNT, POLICY_HEAD))

        def whole(text: str | None) -> int | None:
            try:
                return int(text) if text else None
            except ValueError:
                return None

        return whole(got.get(POLICY_LAST)), whole(got.get(POLICY_COUNT)), got.get(POLICY_HEAD) or None

    def seal_head(self, conn: Connection, last: int | None, count: int, last_seal: str | None) -> None:
        """Name the newest change and the count, and seal them as one under the store's key."""
        self._meta.put(conn, POLICY_LAST, "" if last is None else str(last))
        self._meta.put(conn, POLICY_COUNT, str(count))
        self._meta.put(conn, POLICY_HEAD, trail.policy_head_seal(last, count, last_seal, self._db.seal_key))
        # The key's holder keeps the head it wrote (history/witness.py): a
        # copy of an older head, restored later, is then found. Kept before
        # the commit: a change rolled back after it is reported, and a
        # change recorded anew vouches for the head again.
        witness.saw(self._db.seal_key, self._db.where, last, count, anew=True)

    def record(self, conn: Connection, change: NewPolicy) -> int:
        """A change of the policy, in force from now on, linked to the last
        one and sealed.

        Returns:
            Its id.
        """
        values: dict[str, Any] = {
            "require_second_json": change.require_second_json,
            "proposal_seconds": change.proposal_seconds,
            "web_account": change.web_account,
            "operator": change.operator,
            "account": change.account,
            "at": change.at,
            "reason": change.reason,
        }
        # The meta row held first: two changes at once are linked one after the other.
        last = self._meta.int_of(conn, POLICY_LAST, lock=True)
        count = self._meta.int_of(conn, POLICY_COUNT) or 0
        res = conn.execute(insert(policy).values(**values, prev_id=last))
        pid = int(res.inserted_primary_key[0]) if res.inserted_primary_key else 0
        row = {**values, "id": pid, "prev_id": last}
        seal = trail.policy_seal(row, self._db.seal_key)
        conn.execute(update(policy).where(policy.c.id == pid).values(seal=seal))
        self.seal_head(conn, pid, count + 1, seal)
        return pid

    def reseal(self, conn: Connection) -> None:
        """Link and seal every change anew, in id order, as it now stands
        (an upgrade from before seals, or an operator vouching for a damaged
        log by recording the policy anew)."""
        if "phasegate_policy" not in self._db.tables:
            return
        last: int | None = None
        count = 0
        seal: str | None = None
        for row in conn.execute(select(policy).order_by(policy.c.id)).fetchall():
            m = dict(row._mapping)
            m["prev_id"] = last
            seal = trail.policy_seal(m, self._db.seal_key)
            conn.execute(update(policy).where(policy.c.id == m["id"]).values(prev_id=last, seal=seal))
            last, count = int(m["id"]), count + 1
        self.seal_head(conn, last, count, seal)
