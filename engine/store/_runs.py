"""The runs table (`phasegate_runs`): one row per run, its status, head,
frontier and lease, and the stored attention rank the operator's list is
ordered by. The lease columns' fenced writes are `_lease.py`'s; the head's
and frontier's on the hot path are `_hotpath.py`'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypedDict

from sqlalchemy import and_, case, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Row

from .. import _json
from ..errors import RunNotFound
from . import _paging, _rawread, _rowcheck, runorder
from ._database import Database, driver
from .schema import decisions, runs

_RUNS = _rawread.Reader(runs)


class RunChange(TypedDict, total=False):
    """Columns of a run's row to change, typed (the runs table's, less its
    id and what the store alone keeps: the attention rank, the decisions'
    and effects' history ends). What crosses into `Runs`' named writes."""

    workflow: str
    target: str | None
    inputs_json: str
    inputs_hash: str
    shape_json: str
    status: str
    epoch: int
    head_seq: int
    head_hash: str
    frontier_phase: str | None
    frontier_index: int
    phase_count: int
    steps_done: int
    created_at: float
    updated_at: float
    last_checkpoint_at: float | None
    blocked_json: str
    env_json: str
    notes_json: str
    error_json: str | None
    attention: str
    lease_owner: str | None
    lease_host: str | None
    lease_pid: int | None
    lease_expires_at: float | None
    heartbeat_at: float | None
    wake_at: float | None
    waiting_json: str | None
    held_json: str | None
    trace_id: str | None
    code_json: str | None
    progress_json: str | None


class NewRun(RunChange):
    """A new run's row (`Runs.create`): its id, and the columns it starts with."""

    run_id: str


class Runs:
    """Reads and writes of the runs table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, conn: Connection, run_id: str, *, lock: bool = False, skip_locked: bool = False) -> Row[Any] | None:
        """The run's row; with `lock`, held (FOR UPDATE) until the transaction
        ends where the backend has row locks (SQLite's BEGIN IMMEDIATE already
        serialises writers)."""
        q = select(runs).where(runs.c.run_id == run_id)
        if lock and self._db.dialect.row_locks:
            q = q.with_for_update(skip_locked=skip_locked)
        return _rowcheck.check(conn.execute(q).first())

    def need(self, conn: Connection, run_id: str, *, lock: bool = False) -> Row[Any]:
        """The run's row (held with `lock`, as `get`): the one place "no
        such run" is said.

        Raises:
            RunNotFound: No run `run_id`.
        """
        row = self.get(conn, run_id, lock=lock)
        if row is None:
            raise RunNotFound(f"no run {run_id!r} in {self._db.where}")
        return row

    def first_id(self, conn: Connection) -> str | None:
        """Any one run's id (None: the store has no run)."""
        v = conn.execute(select(runs.c.run_id).limit(1)).scalar()
        return None if v is None else str(v)

    def create(self, conn: Connection, run: NewRun) -> None:
        """A new run's row, its attention rank the one its status stores.

        Raises:
            IntegrityError: a run with this id exists.
        """
        asking = str(run.get("waiting_json") or "").startswith(runorder.ASKING_PREFIX)
        conn.execute(
            insert(runs).values(attention_rank=runorder.stored_rank(str(run.get("status")), False, asking), **run)
        )

    def _change(
        self,
        conn: Connection,
        run_id: str,
        values: RunChange,
        *,
        owner: str | None = None,
        held_at: float | None = None,
    ) -> int:
        """Change the run's row; with `owner`, only while that owner holds the
        lease; with `held_at` too, only while the lease is unexpired at that
        time (a fenced write). A new status moves the stored attention rank
        in the same statement. Returns the rows changed: 0 with `owner`
        means the lease is not theirs."""
        cond = runs.c.run_id == run_id
        if owner is not None:
            cond = and_(cond, runs.c.lease_owner == owner)
        if held_at is not None:
            cond = and_(cond, runs.c.lease_expires_at > self._db.lease_now(held_at))
        cols: dict[str, Any] = dict(values)
        if "status" in cols:
            # The stored attention rank follows the status in the same write.
            cols["attention_rank"] = _paging.rank_for(str(cols["status"]), cols.get("waiting_json"))
        return conn.execute(update(runs).where(cond).values(**cols)).rowcount

    def take_up(self, conn: Connection, run_id: str, change: RunChange) -> None:
        """A start takes the run up: its lease, status and shape as this process sets them."""
        self._change(conn, run_id, change)

    def record_end(self, conn: Connection, run_id: str, end: RunChange, owner: str, held_at: float) -> bool:
        """The run's end (its status, reason, frontier, the lease let go), fenced
        by `owner`'s lease unexpired at `held_at`.

        Returns:
            False when the lease is no longer `owner`'s: nothing was written.
        """
        return self._change(conn, run_id, end, owner=owner, held_at=held_at) > 0

    def set_shape(self, conn: Connection, run_id: str, shape_json: str, owner: str, held_at: float) -> bool:
        """The run's shape as the code about to run declares it, fenced as `record_end` is.

        Returns:
            False when the lease is no longer `owner`'s.
        """
        return self._change(conn, run_id, {"shape_json": shape_json}, owner=owner, held_at=held_at) > 0

    def set_head(self, conn: Connection, run_id: str, seq: int, head_hash: str, *, owner: str | None = None) -> int:
        """Where the run's checkpoint chain ends; with `owner`, only under that owner's lease.

        Returns:
            The rows changed (0 with `owner`: the lease is not theirs).
        """
        return self._change(conn, run_id, {"head_seq": seq, "head_hash": head_hash}, owner=owner)

    def set_frontier(self, conn: Connection, run_id: str, phase: str | None, index: int, steps_done: int) -> None:
        """The run's frontier as its verified chain says (what the runs list shows)."""
        self._change(conn, run_id, {"frontier_phase": phase, "frontier_index": index, "steps_done": steps_done})

    def block(self, conn: Connection, run_id: str, change: RunChange) -> None:
        """The run blocked (its status, reasons and attention in `change`)."""
        self._change(conn, run_id, change)

    def reset(self, conn: Connection, run_id: str, change: RunChange) -> None:
        """The run reset to its first phase in a new epoch (the columns in `change`)."""
        self._change(conn, run_id, change)

    def set_hold(self, conn: Connection, run_id: str, held_json: str | None, now: float) -> None:
        """An operator's hold asked of the run (`held_json`), or withdrawn (None)."""
        self._change(conn, run_id, {"held_json": held_json, "updated_at": now})

    def hold(self, conn: Connection, run_id: str, change: RunChange) -> None:
        """An operator's hold put in force or let go (status, hold, lease, wait in `change`)."""
        self._change(conn, run_id, change)

    def set_attention(self, conn: Connection, run_id: str, attention: str, now: float) -> None:
        """What the runs list says the run needs, as of `now`."""
        self._change(conn, run_id, {"attention": attention, "updated_at": now})

    def wake_now(self, conn: Connection, run_id: str, attention: str, now: float) -> None:
        """A waiting run due at `now` (a message it waits for came): a worker
        takes it up at its next look (`waiting`'s `due`)."""
        conn.execute(
            update(runs)
            .where(runs.c.run_id == run_id, runs.c.status == "waiting")
            .values(wake_at=now, attention=attention[:300], updated_at=now)
        )

    def set_notes(self, conn: Connection, run_id: str, notes_json: str) -> None:
        """The run's notes (JSON), shown at once."""
        self._change(conn, run_id, {"notes_json": notes_json})

    def set_trace_id(self, conn: Connection, run_id: str, trace_id: str) -> None:
        """The OpenTelemetry trace id of the run's latest traced attempt."""
        self._change(conn, run_id, {"trace_id": trace_id})

    def touch(self, conn: Connection, run_id: str, updated_at: float, *, owner: str | None = None) -> int:
        """Write the run's `updated_at` (unchanged or not): the row is written,
        so a change feed (PostgreSQL's trigger) sees the run changed; with
        `owner`, only while that owner's lease is unexpired at `updated_at`.

        Returns:
            The rows changed (0 with `owner`: the lease is lost).
        """
        held_at = updated_at if owner is not None else None
        return self._change(conn, run_id, {"updated_at": updated_at}, owner=owner, held_at=held_at)

    def renew_lease(self, conn: Connection, run_id: str, owner: str, expires_at: float, now: float) -> int:
        """`owner`'s lease renewed to `expires_at` with a heartbeat at `now`,
        only while it is theirs and unexpired at `now` (the lease clock's).

        Returns:
            The rows changed: 0 when the lease is not theirs.
        """
        return self._change(
            conn, run_id, {"lease_expires_at": expires_at, "heartbeat_at": now}, owner=owner, held_at=now
        )

    def clear_lease(self, conn: Connection, run_id: str) -> None:
        """Clear whoever's lease it is (a decision revokes it)."""
        self._change(
            conn, run_id, {"lease_owner": None, "lease_host": None, "lease_pid": None, "lease_expires_at": None}
        )

    def release_lease(self, conn: Connection, run_id: str, owner: str) -> int:
        """Let go of `owner`'s lease (only theirs).

        Returns:
            The rows changed: 0 when the lease is not `owner`'s.
        """
        return self._change(
            conn,
            run_id,
            {"lease_owner": None, "lease_host": None, "lease_pid": None, "lease_expires_at": None},
            owner=owner,
        )

    def mark_decided(self, conn: Connection, run_ids: Sequence[str], attention: str, now: float) -> int:
        """Several runs decided about at once: their leases revoked and their
        attention set, in one statement (never their status).

        Returns:
            The rows changed.
        """
        values = {"lease_owner": None, "lease_host": None, "lease_pid": None, "lease_expires_at": None}
        q = update(runs).where(runs.c.run_id.in_(list(run_ids)))
        return conn.execute(q.values(**values, updated_at=now, attention=attention)).rowcount

    def held(self, conn: Connection, run_id: str) -> str | None:
        """The run's `held_json` alone (what a running run's hold watch polls: one indexed read)."""
        v = conn.execute(select(runs.c.held_json).where(runs.c.run_id == run_id)).scalar()
        return v if isinstance(v, str) else None

    def rerank_many(self, conn: Connection, run_ids: Sequence[str]) -> None:
        """`rerank` of several runs, in one statement."""
        conn.execute(update(runs).where(runs.c.run_id.in_(list(run_ids))).values(attention_rank=_paging.rank_sql()))

    def rerank(self, conn: Connection, run_id: Any) -> None:
        """Its decisions changed: the run's stored attention rank may have."""
        conn.execute(update(runs).where(runs.c.run_id == run_id).values(attention_rank=_paging.rank_sql()))

    def all(
        self,
        conn: Connection,
        *,
        statuses: Sequence[str] | None = None,
        order: str = "run_id",
    ) -> list[Row[Any]]:
        """Every run row with these stored statuses, in a column's order (no
        attention rank: `page` reads the operator's list)."""
        q = self._filtered(select(runs), statuses, None)
        o = runorder.Order.parse(order if order.lstrip("-") != "attention" else "run_id")
        return _paging.keyset(conn, q, o, after=None, inclusive=False, backward=False, limit=None)

    def _filtered(self, q: Any, statuses: Sequence[str] | None, text: str | None) -> Any:
        if statuses:
            q = q.where(runs.c.status.in_(list(statuses)))
        if text:
            like = f"%{text}%"
            q = q.where(or_(runs.c.run_id.like(like), runs.c.workflow.like(like), runs.c.attention.like(like)))
        return q

    def running_candidates(self, conn: Connection, now: float, host: str) -> list[Row[Any]]:
        """The running runs whose holder may be gone: a lease lapsed or no
        one's, or held from `host` (whose pid the caller can ask about). Live
        runs held from other hosts are not read."""
        q = select(runs).where(runs.c.status == "running", or_(_paging.gone_sql(now), runs.c.lease_host == host))
        return list(conn.execute(q))

    def page(
        self,
        conn: Connection,
        *,
        limit: int | None,
        order: str = "attention",
        statuses: Sequence[str] | None = None,
        text: str | None = None,
        now: float = 0.0,
        dead: Sequence[str] = (),
        after: Sequence[Any] | None = None,
        inclusive: bool = False,
        backward: bool = False,
    ) -> list[tuple[Row[Any], tuple[Any, ...]]]:
        """A page of the runs list by keyset (store/_paging.py): the rows
        after the key `after` in `order` (before it with `backward`), each with
        its key and `pending_decision`, in the list's order. `dead`: running
        runs whose holder on this host is known dead, interrupted before
        their lease lapses."""
        o = runorder.Order.parse(order)
        pending = _paging.pending_exists()
        base = self._filtered(select(runs, pending.label("pending_decision")), statuses, text)
        n = limit if limit is not None else -1
        if o.name != "attention":
            got = _paging.keyset(conn, base, o, after=after, inclusive=inclusive, backward=backward, limit=limit)
            rows = [(r, o.key_of(r)) for r in got]
        else:
            gone = and_(runs.c.status == "running", or_(_paging.gone_sql(now), runs.c.run_id.in_(list(dead))))
            # Interrupted runs sit where their rank says, not where their
            # stored (live) rank does: read apart through the lease index,
            # the rest from the rank index, and merged.
            lost = [
                (r, o.key_of(r, runorder.interrupted_rank(bool(r.pending_decision))))
                for r in conn.execute(base.where(gone))
            ]
            got = _paging.keyset(
                conn, base.where(~gone), o, after=after, inclusive=inclusive, backward=backward, limit=limit
            )
            rows = [(r, o.key_of(r)) for r in got]
            if lost:
                rows += runorder.beyond(o, lost, after, inclusive=inclusive, backward=backward)
                rows.sort(key=lambda rk: o.sort_tuple(rk[1]), reverse=backward)
                if n >= 0:
                    rows = rows[:n]
        if backward:
            rows.reverse()
        # Unchecked: one damaged row must not hide the others from the list;
        # the caller checks each and shows a damaged one as such.
        return rows

    def needing_attention(self, conn: Connection) -> list[Row[Any]]:
        """Rows of the runs that may need a person (blocked, failed, running
        with a holder that may be dead, or waiting for an answer) and have no decision waiting, through
        the status index: what `causes.collect` groups. Unchecked, as
        `all`: the caller checks each and shows a damaged one as such."""
        pending = (
            select(decisions.c.id)
            .where(and_(decisions.c.run_id == runs.c.run_id, decisions.c.state == "pending"))
            .exists()
        )
        asking = and_(runs.c.status == "waiting", runs.c.waiting_json.startswith(runorder.ASKING_PREFIX))
        q = (
            select(runs)
            .where(or_(runs.c.status.in_(["blocked", "failed", "running"]), asking), ~pending)
            .order_by(runs.c.run_id)
        )
        return list(conn.execute(q))

    def waiting_for_person(self, conn: Connection, statuses: Sequence[str]) -> list[Row[Any]]:
        """The status, `updated_at`, `blocked_json`, `run_id` (and, where the
        store has it, `waiting_json`) of the runs in these stored statuses with
        no decision pending: what `phasegate metrics`' gauges count."""
        cols = [runs.c.status, runs.c.updated_at, runs.c.blocked_json, runs.c.run_id]
        if "waiting_json" in runs.c:
            cols.append(runs.c.waiting_json)
        if "wake_at" in runs.c:
            cols.append(runs.c.wake_at)
        pending = (
            select(decisions.c.id).where(decisions.c.run_id == runs.c.run_id, decisions.c.state == "pending").exists()
        )
        return list(conn.execute(select(*cols).where(runs.c.status.in_(list(statuses)), ~pending)))

    def count_matching(
        self, conn: Connection, *, statuses: Sequence[str] | None = None, text: str | None = None
    ) -> int:
        """How many rows `all` would return with the same filters (for paging)."""
        q = self._filtered(select(func.count()).select_from(runs), statuses, text)
        return int(conn.execute(q).scalar() or 0)

    def count_by_status(self, conn: Connection) -> dict[str, int]:
        """How many runs have each stored status (absent statuses: none)."""
        rows = conn.execute(select(runs.c.status, func.count()).group_by(runs.c.status))
        return {r[0]: r[1] for r in rows}

    def workflows(self, conn: Connection, *, limit: int = 100) -> list[str]:
        """The workflow names the runs table holds, sorted, at most `limit` (a full scan: read at a start, not per run)."""
        q = select(runs.c.workflow).distinct().order_by(runs.c.workflow).limit(limit)
        return [r[0] for r in conn.execute(q)]

    def phases_by_workflow(self, conn: Connection, *, limit: int = 500) -> dict[str, list[str]]:
        """Each workflow's phase names, as its runs' shapes record them (every
        version's, in order of first appearance), from at most `limit`
        distinct shapes: a full scan, read at a start. A shape that does not
        parse as phases is passed over (stored data is untrusted).

        Returns:
            Workflow name -> its phases' names.
        """
        q = select(runs.c.workflow, runs.c.shape_json).distinct().order_by(runs.c.workflow).limit(limit)
        out: dict[str, list[str]] = {}
        for wf, shape_json in conn.execute(q):
            try:
                shape = _json.loads(shape_json)
            except Exception:  # noqa: BLE001 - a damaged row: verify and status say so, not this read
                continue
            if not isinstance(wf, str) or not isinstance(shape, list):
                continue
            names = out.setdefault(wf, [])
            for p in shape:
                name = p.get("name") if isinstance(p, dict) else None
                if isinstance(name, str) and name not in names:
                    names.append(name)
        return out

    def ids(self, conn: Connection, *, after: str = "", limit: int = 500) -> list[str]:
        """The next `limit` run ids after `after`, in order (a keyset page)."""
        q = select(runs.c.run_id).where(runs.c.run_id > after).order_by(runs.c.run_id).limit(limit)
        return [r[0] for r in conn.execute(q)]

    def waiting(self, conn: Connection, now: float, limit: int = 100, *, host: str = "") -> list[Row[Any]]:
        """Runs a worker may pick up: decided and reset runs first, then
        waiting runs that are due, then `running` runs whose holder may be dead (the caller asks `holder_state`
        of those on this host). A run held by a live lease on another host is
        never in the page, so a hundred of them cannot starve the rest."""
        pending = select(decisions.c.run_id).where(decisions.c.state == "pending")
        # A paused or cancelled run is an operator's to let go on, whatever
        # is pending for it (an answer to a paused run waits for its unpause).
        held = runs.c.status.in_(("paused", "cancelled"))
        decided = and_(~held, or_(runs.c.status == "reset", runs.c.run_id.in_(pending)))
        # A waiting run whose time has come (through ix_runs_status_wake).
        due = and_(runs.c.status == "waiting", runs.c.wake_at.is_not(None), runs.c.wake_at <= now)
        dead_maybe = and_(
            runs.c.status == "running",
            or_(
                runs.c.lease_owner.is_(None),
                runs.c.lease_host == host,  # its pid tells, before its lease lapses
                runs.c.lease_expires_at.is_(None),
                runs.c.lease_expires_at <= now,
            ),
        )
        q = (
            select(runs)
            .where(or_(decided, due, dead_maybe))
            .order_by(case((decided, 0), (due, 1), else_=2), runs.c.updated_at)
            .limit(limit)
        )
        return list(conn.execute(q))

    def by_id(self, conn: Connection, run_ids: Sequence[str], *, lock: bool = False) -> dict[str, Row[Any]]:
        """The rows of these runs (absent ones left out), each checked like
        `get`'s; with `lock`, held as `get(lock=True)` holds one, taken
        in run-id order (two writers locking overlapping groups do not deadlock)."""
        q = select(runs).where(runs.c.run_id.in_(list(run_ids))).order_by(runs.c.run_id)
        if lock and self._db.dialect.row_locks:
            q = q.with_for_update()
        return {r.run_id: _rowcheck.check(r) for r in conn.execute(q)}

    def after(self, conn: Connection, after: str, limit: int) -> list[Any]:
        """The next `limit` run rows after run id `after`, in run-id order
        (a keyset page), each checked like `get`'s. On SQLite read
        through the driver (`_rawread`): a verify reads every run row."""
        if self._db.is_sqlite:
            found: Iterator[Any] = _RUNS.rows(driver(conn), "run_id > ? ORDER BY run_id LIMIT ?", (after, limit))
        else:
            found = iter(conn.execute(select(runs).where(runs.c.run_id > after).order_by(runs.c.run_id).limit(limit)))
        return [_rowcheck.check(r) for r in found]

    def between(self, conn: Connection, first: str, last: str) -> dict[str, Any]:
        """The run rows from run id `first` to `last`, both included, each checked."""
        if self._db.is_sqlite:
            found: Iterator[Any] = _RUNS.rows(driver(conn), "run_id >= ? AND run_id <= ?", (first, last))
        else:
            found = iter(conn.execute(select(runs).where(runs.c.run_id >= first, runs.c.run_id <= last)))
        return {r.run_id: _rowcheck.check(r) for r in found}
