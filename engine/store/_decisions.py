"""The decisions table (`phasegate_decisions`): what operators decided about
a run (pending until the run applies it, then applied or void), and the
proposals that wait for a second operator. A run's stored attention rank
follows its decisions: every change here has `Runs.rerank` move it.

Every row is sealed and linked into its run's decision history
(history/trail.py): a new row names the run's last one and the run row names
the new one; a change of state re-seals a row only while its seal still
vouches for it, so a damaged row stays damaged whatever is done to it next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from ..history import trail
from . import _rawread, _rowcheck
from ._database import Database, driver
from ._runs import Runs
from .schema import decisions, runs

_DECISIONS = _rawread.Reader(decisions)
"""Decision rows read through the driver (a verify reads every run's)."""


@dataclass(frozen=True, slots=True)
class NewDecision:
    """A decision row to record (`Decisions.record`): what crosses into the
    store; its id, link and seal are the store's to give."""

    run_id: str
    """The run it is about."""
    action: str
    """What was decided (`states.Action`'s value, or "second", "prune")."""
    reason: str
    """Why, in the operator's words."""
    operator: str
    """Who decided."""
    at: float
    """When."""
    state: str = "pending"
    """pending (the run applies it at its next start), applied, proposed (waiting for a second) or void."""
    applied_at: float | None = None
    """When it was applied (None until then)."""
    detail_json: str = "{}"
    """What the action needs, as JSON."""
    phase: str | None = None
    """The phase it names, if any."""
    effect_key: str | None = None
    """The effect it answers, if any."""
    answers: str | None = None
    """The kind of block it answers, if any."""
    account: str | None = None
    """The operating-system account it came from."""
    expires_at: float | None = None
    """When a proposal lapses."""
    batch_id: str | None = None
    """The group it was decided in."""
    policy_id: int | None = None
    """The policy change in force when it was recorded."""

    def columns(self) -> dict[str, Any]:
        """Its columns by name (for the insert)."""
        return {
            "run_id": self.run_id,
            "action": self.action,
            "reason": self.reason,
            "operator": self.operator,
            "at": self.at,
            "state": self.state,
            "applied_at": self.applied_at,
            "detail_json": self.detail_json,
            "phase": self.phase,
            "effect_key": self.effect_key,
            "answers": self.answers,
            "account": self.account,
            "expires_at": self.expires_at,
            "batch_id": self.batch_id,
            "policy_id": self.policy_id,
        }


class Decisions:
    """Reads and writes of the decisions table."""

    def __init__(self, runs: Runs, db: Database) -> None:
        self._runs = runs
        self._db = db

    def of_run(self, conn: Connection, run_id: str) -> list[Row[Any]]:
        """Every decision row of the run, oldest first, checked."""
        q = select(decisions).where(decisions.c.run_id == run_id).order_by(decisions.c.id)
        return _rowcheck.check_all(decisions, conn.execute(q))

    def of_runs(self, conn: Connection, run_ids: Sequence[str]) -> dict[str, list[Any]]:
        """The decision rows of these runs, oldest first, by run (one query)."""
        out: dict[str, list[Any]] = {}
        if not run_ids:
            return out
        found: Any
        if self._db.is_sqlite:
            # Through the driver, by the run-id range (`ix_decisions_run`, in
            # its order: each run's oldest first); a Core statement with an
            # IN list cost more CPU than reading the rows (bench/RESULTS.md,
            # issue 43). Runs in the range but not asked for are left out below.
            where = "run_id >= ? AND run_id <= ? ORDER BY run_id, id"
            found = _DECISIONS.rows(driver(conn), where, (min(run_ids), max(run_ids)))
        else:
            found = conn.execute(
                select(decisions).where(decisions.c.run_id.in_(list(run_ids))).order_by(decisions.c.id)
            )
        asked = set(run_ids)
        for r in _rowcheck.check_all(decisions, found):
            if r.run_id in asked:
                out.setdefault(str(r.run_id), []).append(r)
        return out

    def record(self, conn: Connection, decision: NewDecision) -> int:
        """A new decision row, linked and sealed; the run's attention rank follows.

        Returns:
            Its id.
        """
        return self.record_many(conn, [decision])[0]

    def record_many(self, conn: Connection, new: Sequence[NewDecision]) -> list[int]:
        """Several decision rows in one statement, each linked to its run's
        last decision and sealed; their ids, in the order given."""
        return self._insert_many(conn, [d.columns() for d in new])

    def _insert_many(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[int]:
        run_ids = sorted({str(r["run_id"]) for r in rows})
        heads = {
            str(h.run_id): (h.decisions_last, int(h.decisions_count or 0))
            for h in conn.execute(
                select(runs.c.run_id, runs.c.decisions_last, runs.c.decisions_count).where(runs.c.run_id.in_(run_ids))
            )
        }
        q = insert(decisions).returning(decisions.c.id, sort_by_parameter_order=True)
        given = [{**r, "prev_id": None, "seal": None} for r in rows]
        ids = [int(r[0]) for r in conn.execute(q, given)]
        seals: list[dict[str, Any]] = []
        for i, values in zip(ids, given, strict=True):
            rid = str(values["run_id"])
            last, count = heads.get(rid, (None, 0))
            values.update(id=i, prev_id=last)
            seals.append({"b_id": i, "b_prev": last, "b_seal": trail.decision_seal(values, self._db.seal_key)})
            heads[rid] = (i, count + 1)
        conn.execute(
            update(decisions)
            .where(decisions.c.id == bindparam("b_id"))
            .values(prev_id=bindparam("b_prev"), seal=bindparam("b_seal")),
            seals,
        )
        conn.execute(
            update(runs)
            .where(runs.c.run_id == bindparam("b_run"))
            .values(decisions_last=bindparam("b_last"), decisions_count=bindparam("b_count")),
            [{"b_run": rid, "b_last": heads[rid][0], "b_count": heads[rid][1]} for rid in run_ids if rid in heads],
        )
        # Their decisions changed: the runs' stored attention ranks, in one statement.
        if len(run_ids) == 1:
            self._runs.rerank(conn, run_ids[0])
        else:
            self._runs.rerank_many(conn, run_ids)
        return ids

    def _change(self, conn: Connection, where: Any, values: dict[str, Any]) -> list[str]:
        """Change the rows `where` selects, re-sealing each whose seal still
        vouches for it (a damaged row keeps its broken seal: changing its state
        must not launder it). Returns the runs touched."""
        touched: list[str] = []
        for row in conn.execute(select(decisions).where(where)).fetchall():
            m = dict(row._mapping)
            new = {**m, **values}
            seal = (
                trail.decision_seal(new, self._db.seal_key)
                if trail.decision_vouched(m, self._db.seal_key)
                else m["seal"]
            )
            conn.execute(update(decisions).where(decisions.c.id == m["id"]).values(**values, seal=seal))
            touched.append(str(m["run_id"]))
        return touched

    def settle(self, conn: Connection, decision_id: int, state: str, at: float) -> None:
        """The decision applied or void (`state`) at `at`; its run's rank follows."""
        for rid in self._change(conn, decisions.c.id == decision_id, {"state": state, "applied_at": at}):
            self._runs.rerank(conn, rid)

    def seconded(self, conn: Connection, decision_id: int, second_id: int, state: str, at: float) -> None:
        """A proposal seconded by decision `second_id`: now `state` (pending,
        or applied at `at` when it takes effect at once); its run's rank follows."""
        values: dict[str, Any] = {"state": state, "seconded_by": second_id}
        if state == "applied":
            values["applied_at"] = at
        for rid in self._change(conn, decisions.c.id == decision_id, values):
            self._runs.rerank(conn, rid)

    def void_proposals(self, conn: Connection, ids: Sequence[int], at: float) -> None:
        """Settle these proposals void, those still proposed only (one seconded
        meanwhile is a decision now, and is left alone)."""
        if ids:
            self._change(
                conn,
                decisions.c.id.in_(list(ids)) & (decisions.c.state == "proposed"),
                {"state": "void", "applied_at": at},
            )

    def repair(self, conn: Connection, run_id: str, void: Sequence[int], at: float) -> None:
        """An operator's decision answered damage to the run's decision
        history: the damaged decisions are settled void (never carried out),
        and every row is linked and sealed anew as it now stands, vouched for
        by the decision that answers it."""
        if void:
            conn.execute(
                update(decisions)
                .where(decisions.c.id.in_(list(void)), decisions.c.state.in_(("pending", "proposed", "applied")))
                .values(state="void", applied_at=at)
            )
        last: int | None = None
        count = 0
        for row in conn.execute(select(decisions).where(decisions.c.run_id == run_id).order_by(decisions.c.id)):
            m = dict(row._mapping)
            m["prev_id"] = last
            conn.execute(
                update(decisions)
                .where(decisions.c.id == m["id"])
                .values(prev_id=last, seal=trail.decision_seal(m, self._db.seal_key))
            )
            last, count = int(m["id"]), count + 1
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(decisions_last=last, decisions_count=count))
        self._runs.rerank(conn, run_id)

    def open_proposals(self, conn: Connection, run_ids: Sequence[str], now: float) -> list[Row[Any]]:
        """Proposals of these runs still waiting for a second operator (one
        query for a page of the runs list, by its run ids)."""
        if not run_ids:
            return []
        q = (
            select(decisions)
            .where(
                decisions.c.run_id.in_(list(run_ids)),
                decisions.c.state == "proposed",
                decisions.c.expires_at > now,
            )
            .order_by(decisions.c.id)
        )
        return _rowcheck.check_all(decisions, conn.execute(q))

    def every_open_proposal(self, conn: Connection, now: float) -> list[Row[Any]]:
        """Every proposal of any run still waiting for a second operator at `now`
        (`phasegate watch` announces an AI assistant's), oldest first."""
        q = (
            select(decisions)
            .where(decisions.c.state == "proposed", decisions.c.expires_at > now)
            .order_by(decisions.c.id)
        )
        return _rowcheck.check_all(decisions, conn.execute(q))

    def policies_named(self, conn: Connection) -> set[int]:
        """The policy changes the store's decisions name as the one they were
        fitted under (each sealed in its decision): the policy's head must
        still reach every one (history/trail.py `check_policy`)."""
        q = select(decisions.c.policy_id).where(decisions.c.policy_id.is_not(None)).distinct()
        return {int(pid) for (pid,) in conn.execute(q)}

    def count_open_proposals(self, conn: Connection, now: float) -> int:
        """How many proposals of any run still wait for a second operator at `now`."""
        q = (
            select(func.count())
            .select_from(decisions)
            .where(decisions.c.state == "proposed", decisions.c.expires_at > now)
        )
        return int(conn.execute(q).scalar() or 0)
