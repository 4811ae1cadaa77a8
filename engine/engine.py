"""The engine's front door: run a workflow, decide on a stopped run, read a
run's status, verify and prune the store."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import _json
from ._dbpath import default_db
from ._host import HOST
from .authoring import sources as _sources
from .authoring.workflow import Workflow
from .decide import fit as _decisions
from .decide.gate import Oversight
from .decide.recording import record
from .decide.triage import Triage
from .errors import (
    PhasegateError,
    RunNotFound,
    StoreError,
    UsageError,
)
from .history import archive, chain, seals
from .history import prune as _prune
from .ids import validate_run_id
from .outcome import Outcome
from .oversight import claims
from .oversight.identity import whoami
from .run.completions import DEFAULT_DELAY
from .run.frontier import frontier_columns, trusted_frontier
from .run.lease import HolderState, holder_alive, holder_state
from .run.runner import Runner
from .states import Action, RunStatus
from .store import _rowcheck
from .store.store import ChangeProbe, OwnRows, Store
from .views.build import RunSummary, RunView, build, effective_status
from .views.workers import WorkerView, list_workers


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise UsageError(f"{name} must be a number, not {raw!r}") from None


def _checked_lease(value: float) -> float:
    # nan would store a NULL expiry (a run held for ever), a negative one a
    # lease already lapsed (a second process takes a live run).
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"the lease (PHASEGATE_LEASE_SECONDS) must be a finite number of seconds > 0, not {value}")
    return value


def _checked_claim(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise UsageError(
            f"the claim expiry (PHASEGATE_CLAIM_SECONDS) must be a finite number of seconds > 0, not {value}"
        )
    return value


def _checked_flush(value: float) -> float:
    # How long an effect's completion may wait to commit with the run's next
    # write (completions.py): a negative or endless wait would strand it.
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"PHASEGATE_EFFECT_FLUSH_MS must be a finite number of milliseconds >= 0, not {value * 1000}")
    return value


def _checked_retention(value: float) -> float:
    if math.isnan(value) or value < 0:
        raise UsageError(f"the retention (PHASEGATE_RETENTION_DAYS) must be a number of days >= 0, not {value}")
    return value


_VERIFY_PAGE = 500
"""Runs verified per read transaction: one streamed query for their chains."""
_VERIFY_SPLIT_BYTES = 4 << 20
"""The store size from which verify uses a second thread (`Engine._verify_lane`):
the second lane costs about 1.1 ms of CPU a verify (its thread, connection,
transaction and mapping, its half's run rows read again), and can save at
most half of the 1.2-1.7 ms a MB a verify costs, less what the two threads
wait for the GIL."""
_Checked = tuple[dict[str, Any], dict[str, tuple[dict[str, Any], Any]], dict[str, list[Any]]]
"""A verified page: its run rows, each run's report and failure, its effect damage."""


class Engine:
    """A phasegate store and the operations on it.

    `db` is a file path (SQLite, the default) or an SQLAlchemy URL. `clock`
    is injectable so tests and snapshots can freeze time."""

    def __init__(
        self,
        db: str | Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        lease_seconds: float | None = None,
        retention_days: float | None = None,
        archive_dir: str | None = None,
        claim_seconds: float | None = None,
        create: bool = True,
        readonly: bool = False,
        effect_flush: float | None = None,
    ) -> None:
        # Settings first: a bad one is refused before any store is created.
        self.lease_seconds = _checked_lease(
            lease_seconds if lease_seconds is not None else _env_float("PHASEGATE_LEASE_SECONDS", 30.0)
        )
        #: Seconds an effect's completion may wait to commit with the run's next
        #: transaction (0: committed before `ctx.effect` returns).
        self.effect_flush = _checked_flush(
            effect_flush
            if effect_flush is not None
            else _env_float("PHASEGATE_EFFECT_FLUSH_MS", DEFAULT_DELAY * 1000) / 1000
        )
        self.retention_days = _checked_retention(
            retention_days if retention_days is not None else _env_float("PHASEGATE_RETENTION_DAYS", 30.0)
        )
        self.claim_seconds = _checked_claim(
            claim_seconds
            if claim_seconds is not None
            else _env_float("PHASEGATE_CLAIM_SECONDS", claims.DEFAULT_CLAIM_SECONDS)
        )
        self.store = Store(
            db if db is not None else default_db(), create=create, readonly=readonly, lease_seconds=self.lease_seconds
        )
        self.clock = clock
        #: Checked between phases; when it returns True the run stops cleanly,
        #: resumable, with its lease released (a worker's graceful shutdown).
        self.should_stop: Callable[[], bool] | None = None
        self.archive_dir = archive.archive_dir(self.store.path, archive_dir or os.environ.get("PHASEGATE_ARCHIVE_DIR"))
        self._oversight = Oversight(self.store, clock, self._view, self.claim_seconds)
        self._triage = Triage(self.store, clock, self._view, self._oversight)

    @property
    def oversight(self) -> Oversight:
        """Claims, the store's policy and seconds (decide/gate.py)."""
        return self._oversight

    @property
    def triage(self) -> Triage:
        """Causes, and one decision for many runs (triage.py)."""
        return self._triage

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- running --------------------------------------------------------------

    def run(
        self, wf: Workflow, run_id: str, inputs: Any = None, *, target: str | None = None, force: bool = False
    ) -> Outcome:
        """Start or continue a run. Always the same start sequence: look for a
        checkpoint, verify it, compare the world, then run what is open.
        `force` takes the run over from a stalled holder (see `HolderStalled`)."""
        if not isinstance(wf, Workflow):
            raise UsageError(f"{wf!r} is not a phasegate Workflow")
        runner = Runner(
            self.store,
            wf,
            run_id,
            inputs,
            inputs_given=inputs is not None,
            target=target,
            clock=self.clock,
            lease_seconds=self.lease_seconds,
            should_stop=self.should_stop,
            force=force,
            effect_flush=self.effect_flush,
        )
        return runner.execute()

    # -- decisions ------------------------------------------------------------

    def decide(
        self,
        run_id: str,
        action: str,
        *,
        reason: str,
        operator: str | None = None,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _decisions.NO_RESULT,
        force: bool = False,
        expect_env: str | None = None,
        override_claim: bool = False,
    ) -> _decisions.Decision:
        """Record an operator's decision on a stopped run. It is checked against
        the run as it is inside the recording transaction (`decisions.fit`),
        kept forever, and applied at the next `run` of that id; a reset is
        applied at once (applying.py), since it archives the state.
        `expect_env` (approve): the `env_hash` of the preview the operator
        saw; the approval is refused if the run's changes differ now.
        Recording it revokes the run's lease (a stalled holder's, the only one
        a decision can meet): whatever that process does when it wakes is
        fenced off. An effect decision against a stalled holder needs `force`.
        A run someone else claimed needs `override_claim` (`ClaimedByOther`).
        An action the store's policy lists is only *proposed* (state
        "proposed"): nothing changes until another operator seconds it (`second`)."""
        validate_run_id(run_id)
        act = _decisions.parse_action(action)
        _decisions.check_reason(reason)
        who = whoami(operator)
        now = self.clock()
        with self.store.write() as conn:
            run = self.store.runs.get(conn, run_id, lock=True)
            if run is None:
                raise RunNotFound(f"no run {run_id!r} in {self.store.where}")
            view = self._view(conn, run, now, with_candidates=False)
            chosen = _decisions.fit(
                view, act, phase=phase, effect=effect, result=result, expect_env=expect_env, force=force
            )
            _decisions.require_result(act, result)
            state, expires = self._oversight.admit(conn, view, act, chosen, who, now, override_claim=override_claim)
            (done,) = record(
                self.store,
                conn,
                [(run, view, chosen)],
                reason=str(reason),
                who=who,
                phase=phase,
                now=now,
                state=state,
                expires_at=expires,
            )
            return done

    # -- reading --------------------------------------------------------------

    def status(self, run_id: str) -> RunView:
        with self.store.read() as conn:
            run = self.store.runs.get(conn, run_id)
            if run is None:
                raise RunNotFound(f"no run {run_id!r} in {self.store.where}")
            return self._view(conn, run, self.clock())

    def _view(
        self,
        conn: Any,
        run: Any,
        now: float,
        *,
        with_candidates: bool = True,
        with_diffs: bool = True,
        own: OwnRows | None = None,
    ) -> RunView:
        """A run's view from its own rows, read on `conn` (or given: `own`,
        read for many runs at once by `Store.own_rows.of_runs`)."""
        if own is None:
            own = OwnRows(
                self.store.checkpoints.of_run(conn, run.run_id),
                self.store.steps.of_run(conn, run.run_id),
                self.store.effects.of_run(conn, run.run_id),
                self.store.decisions.of_run(conn, run.run_id),
            )
        rows, steps, effects, decisions, held = own
        verified = chain.verify_run(run, rows)  # once, for the view and the prune candidates
        cands = (
            _prune.candidates(run, rows, steps, now=now, retention_days=self.retention_days, verified=verified)
            if with_candidates
            else []
        )
        view = build(run, rows, steps, effects, decisions, cands, now, verified)
        # The code behind a drift, from the stored sources: read only when a
        # code change is among the reasons the run is blocked.
        diffs = _sources.diffs(self.store, conn, view.blocked) if with_diffs else []
        if diffs:
            view = replace(view, code_diffs=tuple(diffs))
        if held is None:
            held = self.store.claims.of_run(conn, run.run_id)
        if held:
            view = replace(view, claim=claims.in_force(held, now), claims=tuple(claims.history(held, now)))
        return view

    def runs(
        self,
        *,
        limit: int | None = None,
        offset: int = 0,
        statuses: Sequence[str] | None = None,
        text: str | None = None,
        order: str = "attention",
        after: Sequence[Any] | None = None,
        inclusive: bool = False,
        backward: bool = False,
    ) -> list[RunSummary]:
        """A page of the runs list, needs-attention first (or by `order`: run_id,
        workflow, status, frontier, last_checkpoint_at; "-" prefix descends);
        reads the runs table only.

        Paged by keyset: `after` is a row's `sort_key` (read in the same
        order), and the page holds the rows after it (at or after it with
        `inclusive`; before it with `backward`, the last page when `after` is
        None). Every page costs the same, wherever it is in the list;
        `offset` skips rows read and is there for small lists only."""
        now = self.clock()
        with self.store.read() as conn:
            dead: list[str] = []
            if order.lstrip("-") == "attention":
                # A dead holder on this host is interrupted at once, not when
                # its lease lapses: the list places it there from the first look.
                dead = [
                    r.run_id
                    for r in self.store.runs.running_candidates(conn, now, HOST)
                    if r.lease_host == HOST and not _alive(r, now)
                ]
            keyed = self.store.runs.page(
                conn,
                limit=None if limit is None else limit + offset,
                order=order,
                statuses=statuses,
                text=text,
                now=now,
                dead=dead,
                after=after,
                inclusive=inclusive,
                backward=backward,
            )
        if offset:
            keyed = keyed[:-offset] if backward else keyed[offset:]
        out = []
        for r, key in keyed:
            try:
                out.append(RunSummary.from_row(_rowcheck.check(r), now, key))
            except StoreError as exc:
                out.append(RunSummary.damaged(r, exc.message, key))
        return out

    def count_runs(self, *, statuses: Sequence[str] | None = None, text: str | None = None) -> int:
        """How many runs `runs` would list with these filters (the console pages with it)."""
        with self.store.read() as conn:
            return self.store.runs.count_matching(conn, statuses=statuses, text=text)

    def counts(self) -> dict[str, int]:
        """Runs by status as an operator sees it (a dead holder's run counts
        as interrupted). Reads one grouped count plus the running rows whose
        holder may be gone (a lapsed lease, or one held from this host)."""
        now = self.clock()
        with self.store.read() as conn:
            counts = self.store.runs.count_by_status(conn)
            running = self.store.runs.running_candidates(conn, now, HOST) if counts.get("running") else []
        for r in running:
            try:
                seen = effective_status(_rowcheck.check(r), now)
            except StoreError:
                continue  # a damaged row is counted as stored; the list shows the damage
            if seen is not RunStatus.RUNNING:  # interrupted or stalled
                counts["running"] -= 1
                counts[seen.value] = counts.get(seen.value, 0) + 1
        return {k: v for k, v in counts.items() if v}

    def allowed_actions(self, run: RunView | str) -> list[Action]:
        """The decisions that fit this run now (the console offers only these).
        Give the view already read to ask several questions of one read."""
        return _decisions.allowed_actions(run if isinstance(run, RunView) else self.status(run))

    def preview(
        self,
        run: RunView | str,
        action: str,
        *,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _decisions.NO_RESULT,
        reason: str | None = None,
        force: bool = False,
        expect_env: str | None = None,
    ) -> _decisions.Preview:
        """What a decision would do, without recording it; refused exactly
        as `decide` would refuse it, in the same order (a `reason`, when
        given, is checked as `decide` checks it)."""
        if isinstance(run, str):
            validate_run_id(run)
        _decisions.parse_action(action)
        if reason is not None:
            _decisions.check_reason(reason)
        view = run if isinstance(run, RunView) else self.status(run)
        return _decisions.preview(
            view, action, phase=phase, effect=effect, result=result, expect_env=expect_env, force=force
        )

    def run_ids(self) -> Iterator[str]:
        after = ""
        while True:
            with self.store.read() as conn:
                page = self.store.runs.ids(conn, after=after)
            if not page:
                return
            yield from page
            after = page[-1]

    def data_version(self) -> ChangeProbe:
        """A probe whose `changed()` says whether another connection committed
        since it was last asked (SQLite's data_version; PostgreSQL's LISTEN)."""
        return self.store.changes.probe()

    def workers(self) -> list[WorkerView]:
        """The workers that recorded a heartbeat, most recently seen first,
        each with whether it is alive now (`workers.is_alive`)."""
        return list_workers(self.store, self.clock)

    @property
    def db_file(self) -> Path | None:
        """The SQLite database file, or None for a PostgreSQL store: what
        `watch_store` watches for commits, without reaching into the store."""
        return self.store.path

    # -- verification ---------------------------------------------------------

    def verify(self, run_id: str | None = None, *, record: bool = True, deep: bool = False) -> list[dict[str, Any]]:
        """Verify the stored chain of every run (or one). A failure found in a
        stopped run is recorded on it, so operators see it before anything runs.

        By default every hash and link is checked over the stored bytes and
        outputs are not parsed (a resume parses what it reads anyway); `deep`
        parses each output too, as `phasegate verify --deep` does. Runs are
        read a keyset page at a time in one read transaction, each page's
        chains in one streamed query (on SQLite through the driver, as stored
        bytes); a large SQLite store on a machine with a core to spare is
        verified half a page on a second thread (`_verify_lane`)."""
        reports: list[dict[str, Any]] = []
        if self.store.schema_problem:
            return [{"run_id": None, "ok": False, "failure": {"what": "schema", "message": self.store.schema_problem}}]
        with ExitStack() as held:
            conn = held.enter_context(self.store.scan())
            lane = self._verify_lane(held, run_id)
            after: str | None = ""
            while after is not None:
                other = None
                with self.store.read_on(conn):
                    if run_id:
                        rows = list(self.store.runs.by_id(conn, [run_id]).values())
                        if not rows:
                            raise RunNotFound(f"no run {run_id!r} in {self.store.where}")
                    else:
                        rows = self.store.runs.after(conn, after, _VERIFY_PAGE)
                    page = [r.run_id for r in rows]
                    if lane is not None and len(page) >= 2:
                        # The second half of the page (a run-id range) in its
                        # own read transaction on the other lane, meanwhile.
                        theirs = page[len(page) // 2 :]
                        other = lane[1].submit(self._verify_part, lane[0], theirs, deep)
                        rows = rows[: len(page) // 2]
                    run_rows, found, damage = self._verify_page(conn, {r.run_id: r for r in rows}, deep)
                if other is not None:
                    their_rows, their_found, their_damage = other.result()
                    run_rows.update(their_rows)
                    found.update(their_found)
                    damage.update(their_damage)
                # The next page starts after this one (keyset): one read
                # transaction a page, none held while failures are recorded.
                after = page[-1] if len(page) == _VERIFY_PAGE and not run_id else None
                for rid in page:
                    run = run_rows.get(rid)
                    if run is None:
                        continue  # deleted since it was listed
                    report, failure = found.get(rid) or self._verify_one(run, [], deep)
                    harmed = damage.get(rid) or []
                    if harmed:  # present only when there is some: the JSON of a whole store is unchanged
                        report["effects"] = [d.as_dict() for d in harmed]
                        report["ok"] = False
                    reports.append(report)
                    if (failure is not None or harmed) and record and not self.store.readonly:
                        reasons = (
                            [{"kind": "integrity", "detail": failure.detail(), "failure": failure.as_dict()}]
                            if failure is not None
                            else [
                                {"kind": "integrity", "detail": d.detail, "what": "effect", **d.as_dict()}
                                for d in harmed
                            ]
                        )
                        self._record_integrity(rid, reasons)
        return reports

    def _verify_lane(self, held: ExitStack, run_id: str | None) -> tuple[Any, ThreadPoolExecutor] | None:
        """A second connection, with a thread, to verify half of each page
        while this thread verifies the other half. The reading (sqlite3) and
        the hashing (hashlib) let go of the GIL, so the two use two cores,
        where a second core is free; with none, they were 5-30% slower
        than one thread (bench/RESULTS.md, verify-fast). So none for one run,
        for PostgreSQL, for a store smaller than `_VERIFY_SPLIT_BYTES`, or
        without a spare core."""
        path = self.store.path
        if run_id or path is None or not self.store.is_sqlite or _spare_cores() < 1:
            return None
        try:
            if path.stat().st_size < _VERIFY_SPLIT_BYTES:
                return None
        except OSError:
            return None
        pool = held.enter_context(ThreadPoolExecutor(1, thread_name_prefix="phasegate-verify"))
        return held.enter_context(self.store.scan()), pool

    def _verify_part(self, conn: Any, part: list[str], deep: bool) -> _Checked:
        """`part` of a page (a run-id range), in its own read transaction on `conn`."""
        with self.store.read_on(conn):
            run_rows = self.store.runs.between(conn, part[0], part[-1])
            return self._verify_page(conn, {rid: run_rows[rid] for rid in part if rid in run_rows}, deep)

    def _verify_page(self, conn: Any, run_rows: dict[str, Any], deep: bool) -> _Checked:
        """In the read transaction `conn` holds, for these runs (a run-id
        range): each chain verified as it streams (one run's outputs in
        memory at a time), and their effect records in one query."""
        found = {
            rid: self._verify_one(run_rows[rid], rows, deep)
            for rid, rows in self.store.checkpoints.live_chains(
                conn, {r: int(row.epoch) for r, row in run_rows.items()}
            )
        }
        by_run = self.store.effects.of_runs(conn, list(run_rows))
        damage = {
            rid: seals.check(by_run.get(rid, []), row.effects_last, row.effects_count) for rid, row in run_rows.items()
        }
        return run_rows, found, damage

    def _verify_one(
        self, run: Any, rows: list[Any], deep: bool
    ) -> tuple[dict[str, Any], chain.IntegrityFailure | None]:
        actual_inputs = _json.sha256(run.inputs_json)
        if actual_inputs != run.inputs_hash:
            # The same check the start sequence makes before it parses the inputs.
            v = chain.Verified(
                [],
                chain.IntegrityFailure(-1, None, "inputs", run.inputs_hash, actual_inputs, "stored inputs damaged"),
            )
        else:
            v = chain.verify_run(run, rows, parse_outputs=deep)
        report = {
            "run_id": run.run_id,
            "ok": v.failure is None,
            "checkpoints": len(rows),
            "bytes": sum(len(r.envelope) + len(r.output_json or "") for r in rows),
            "failure": v.failure.as_dict() if v.failure else None,
            "lost": _lost_outputs(v),
        }
        return report, v.failure

    def _record_integrity(self, run_id: str, reasons: list[dict[str, Any]]) -> None:
        now = self.clock()
        with self.store.write() as conn:
            run = self.store.runs.get(conn, run_id)
            if run is None or holder_state(run, now) in (HolderState.LIVE, HolderState.STALLED):
                return
            # The list shows the run row's frontier: move it back to what is
            # trusted, as the detail and `status --json` already show it.
            fr = trusted_frontier(
                run,
                self.store.checkpoints.of_run(conn, run_id),
                self.store.steps.of_run(conn, run_id),
                self.store.effects.of_run(conn, run_id),
                _json.loads(run.shape_json),
            )
            blocked = _json.loads(run.blocked_json or "[]")
            if any(b.get("kind") == "integrity" for b in blocked) and run.status == RunStatus.BLOCKED.value:
                if (run.frontier_phase, int(run.frontier_index), int(run.steps_done)) != (
                    fr.phase,
                    fr.index,
                    fr.steps_done,
                ):
                    self.store.runs.update(conn, run_id, frontier_columns(fr))
                return
            self.store.runs.update(
                conn,
                run_id,
                {
                    "status": RunStatus.BLOCKED.value,
                    "blocked_json": _json.dumps(reasons),
                    "attention": f"integrity: {reasons[0]['detail']}"[:300],
                    "updated_at": now,
                    **frontier_columns(fr),
                },
            )

    # -- pruning --------------------------------------------------------------

    def prune_candidates(self, run_id: str | None = None) -> list[_prune.PruneCandidate]:
        out: list[_prune.PruneCandidate] = []
        ids = [run_id] if run_id else list(self.run_ids())
        now = self.clock()
        for rid in ids:
            with self.store.read() as conn:
                run = self.store.runs.get(conn, rid)
                if run is None:
                    raise RunNotFound(f"no run {rid!r} in {self.store.where}")
                rows = self.store.checkpoints.of_run(conn, rid)
                steps = self.store.steps.of_run(conn, rid)
            out.extend(_prune.candidates(run, rows, steps, now=now, retention_days=self.retention_days))
        return out

    def prune(
        self,
        *,
        apply: bool = False,
        run_id: str | None = None,
        operator: str | None = None,
        reason: str = "prune",
    ) -> list[_prune.PruneCandidate]:
        """List (or with `apply`, remove) what is safe to prune. Each run's
        candidates are re-derived inside the write transaction that removes
        them, so nothing is removed on a judgement made before a change."""
        listed = self.prune_candidates(run_id)
        if not apply:
            return listed
        who = whoami(operator).operator
        done: list[_prune.PruneCandidate] = []
        for rid in dict.fromkeys(c.run_id for c in listed):
            try:
                done.extend(self._prune_run(rid, who, reason))
            except OSError as exc:
                # The run's transaction was rolled back: an archive we could not
                # write (or read back) is no confirmation, so nothing was removed.
                raise PhasegateError(
                    f"cannot write the archive for run {rid!r} under {self.archive_dir}: {exc.strerror or exc}; "
                    "nothing of that run was pruned",
                    title="archive not written",
                ) from None
        return done

    def _prune_run(self, run_id: str, who: str, reason: str) -> list[_prune.PruneCandidate]:
        now = self.clock()
        with self.store.write() as conn:
            run = self.store.runs.get(conn, run_id)
            if run is None:
                return []
            rows = self.store.checkpoints.of_run(conn, run_id)
            steps = self.store.steps.of_run(conn, run_id)
            cands = _prune.candidates(run, rows, steps, now=now, retention_days=self.retention_days)
            by_id = {int(r.id): r for r in rows}
            folder = self.archive_dir / archive.safe_name(run_id)
            for c in cands:
                if c.kind == "step_records":
                    self.store.steps.delete(conn, list(c.refs))
                    continue
                for ref in c.refs:
                    row = by_id[ref]
                    if c.safety == "archive":
                        payload = {
                            "run_id": run_id,
                            "epoch": int(row.epoch),
                            "seq": int(row.seq),
                            "phase": row.phase,
                            "output_hash": _json.loads(row.envelope).get("output_hash"),
                            "output_json": row.output_json,
                        }
                        path, _digest = archive.write_archive(folder, archive.archive_name(row), payload)
                        if archive.restore(path, payload["output_hash"]) is archive.MISSING:
                            raise OSError(f"archive {path} did not read back intact; nothing removed")
                        self.store.checkpoints.set_output_state(conn, ref, "archived", str(path))
                    else:
                        self.store.checkpoints.set_output_state(conn, ref, "pruned", None)
                if c.kind == "finished_run":
                    self.store.steps.delete(conn, list(c.step_refs))
            if cands:
                self.store.decisions.insert(
                    conn,
                    {
                        "run_id": run_id,
                        "action": "prune",
                        "reason": reason,
                        "operator": who,
                        "at": now,
                        "state": "applied",
                        "applied_at": now,
                        "detail_json": _json.dumps(
                            {"pruned": [{"what": c.what, "bytes": c.bytes, "why_safe": c.why_safe} for c in cands]}
                        ),
                    },
                )
                self.store.runs.update(conn, run_id, {"updated_at": run.updated_at})
        return cands


def _spare_cores() -> float:
    """Cores this process may use less the load on the machine (the
    one-minute average of runnable tasks, this one's among them), as `make
    --load-average` decides whether to start another job: an idle two-core
    machine has one and more to spare, a busy one none."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load figure here: count every other core as busy
        load = cores - 1
    return cores - load


def _lost_outputs(v: chain.Verified) -> list[dict[str, Any]]:
    """Done phases of the trusted chain whose output cannot be had now: the
    chain verifies, but what it vouches for is gone (a stored copy lost, an
    archive deleted or altered)."""
    if all(e.row.output_state == "present" and e.row.output_json is not None for e in v.entries):
        return []  # every output is at hand (`archive.why_lost`): no need to replay the chain to ask
    out = []
    for name, d in chain.fold(v.entries).done.items():
        why = archive.why_lost(d.entry)
        if why is not None:
            out.append({"phase": name, "seq": int(d.entry.row.seq), "message": f"output of {name} is lost: {why}"})
    return out


def _alive(row: Any, now: float) -> bool:
    """`holder_alive`, with a damaged row counted alive (it is listed as damaged, not moved)."""
    try:
        return holder_alive(_rowcheck.check(row), now)
    except (StoreError, TypeError, ValueError):
        return True
