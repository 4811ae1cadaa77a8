"""Verifying a store: every run's stored chain of checkpoints, and its
effect records, checked against their hashes and links; a failure found in a
stopped run recorded on it, so operators see it before anything runs.

Runs are read a keyset page at a time in one read transaction, each page's
chains in one streamed query; a large SQLite store on a machine with a core
to spare is verified half a page on a second thread (`Verifier._lane`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from .. import _json
from .._pause import pause_point
from ..errors import RunNotFound
from ..history import archive, chain, seals, trail
from ..outcome import BlockReason
from ..oversight import policy as _policy
from ..oversight.identity import distinct
from ..run.frontier import frontier_columns, trusted_frontier
from ..run.lease import HolderState, holder_state
from ..run.planner import trail_reason
from ..states import BlockKind, RunStatus
from ..store.store import Store
from .reports import LostOutput, PolicyReport, UnknownSchema, UnmarkedStore, VerifyReport

_PAGE = 500
"""Runs verified per read transaction: one streamed query for their chains."""
_SPLIT_BYTES = 4 << 20
"""The store size from which verify uses a second thread (`Verifier._lane`):
the second lane costs about 1.1 ms of CPU a verify (its thread, connection,
transaction and mapping, its half's run rows read again), and can save at
most half of the 1.2-1.7 ms a MB a verify costs, less what the two threads
wait for the GIL."""
_Checked = tuple[
    dict[str, Any], dict[str, VerifyReport], dict[str, list[seals.EffectDamage]], dict[str, list[trail.Damage]]
]
"""A verified page: its run rows, each run's chain report, its effect damage, its decision damage."""


class Verifier:
    """The verification of one store.

    Args:
        store: The store verified (and, for a failure, written).
        clock: The time a failure is recorded at, and a holder judged alive at.
    """

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self.store = store
        self.clock = clock
        self._policies: list[Any] = []
        """Every policy change, read once a verify (what each decision's policy listed)."""

    def verify(
        self, run_id: str | None = None, *, record: bool = True, deep: bool = False
    ) -> list[VerifyReport | UnknownSchema | PolicyReport | UnmarkedStore]:
        """`Engine.verify`: every run (or one), each chain read as it streams
        (on SQLite through the driver, as stored bytes), each failure recorded
        on its run with `record` unless the store is read-only."""
        reports: list[VerifyReport | UnknownSchema | PolicyReport | UnmarkedStore] = []
        if self.store.schema_problem:
            return [UnknownSchema(self.store.schema_problem)]
        kind = f"keyed:{self.store.store_key_id}" if self.store.store_key_id else "plain"
        record = record and not self.store.db.seal_problem  # a key mismatch is reported, never written over
        if self.store.store_key_id is None and self.store.held_key is not None and self.store.db.seal_problem:
            reports.append(UnmarkedStore(self.store.db.seal_problem))
        with ExitStack() as held:
            conn = held.enter_context(self.store.scan())
            with self.store.read_on(conn):
                self._policies = self.store.policy.changes(conn, limit=None)
                harmed_policy = _policy.damage(self.store, conn, self._policies)
            if harmed_policy:
                reports.append(PolicyReport(tuple(harmed_policy), kind))
            lane = self._lane(held, run_id)
            after: str | None = ""
            while after is not None:
                other = None
                with self.store.read_on(conn):
                    if run_id:
                        rows = list(self.store.runs.by_id(conn, [run_id]).values())
                        if not rows:
                            raise RunNotFound(f"no run {run_id!r} in {self.store.where}")
                    else:
                        rows = self.store.runs.after(conn, after, _PAGE)
                    page = [r.run_id for r in rows]
                    if lane is not None and len(page) >= 2:
                        # The second half of the page (a run-id range) in its
                        # own read transaction on the other lane, meanwhile.
                        theirs = page[len(page) // 2 :]
                        other = lane[1].submit(self._part, lane[0], theirs, deep)
                        rows = rows[: len(page) // 2]
                    run_rows, found, damage, wrong = self._page(conn, {r.run_id: r for r in rows}, deep)
                if other is not None:
                    their_rows, their_found, their_damage, their_wrong = other.result()
                    run_rows.update(their_rows)
                    found.update(their_found)
                    damage.update(their_damage)
                    wrong.update(their_wrong)
                # The next page starts after this one (keyset): one read
                # transaction a page, none held while failures are recorded.
                after = page[-1] if len(page) == _PAGE and not run_id else None
                for rid in page:
                    run = run_rows.get(rid)
                    if run is None:
                        continue  # deleted since it was listed
                    report = found.get(rid) or self._one(run, [], deep)
                    harmed = damage.get(rid) or []
                    report = replace(report, effects=tuple(harmed), decisions=tuple(wrong.get(rid) or ()), seals=kind)
                    reports.append(report)
                    if not report.ok and record and not self.store.readonly:
                        self._record_integrity(rid, _integrity_reasons(report))
        return reports

    def _lane(self, held: ExitStack, run_id: str | None) -> tuple[Any, ThreadPoolExecutor] | None:
        """A second connection, with a thread, to verify half of each page
        while this thread verifies the other half. The reading (sqlite3) and
        the hashing (hashlib) let go of the GIL, so the two use two cores,
        where a second core is free; with none, they were 5-30% slower
        than one thread (bench/RESULTS.md, verify-fast). So none for one run,
        for PostgreSQL, for a store smaller than `_SPLIT_BYTES`, or
        without a spare core."""
        path = self.store.path
        if run_id or path is None or not self.store.is_sqlite or _spare_cores() < 1:
            return None
        try:
            if path.stat().st_size < _SPLIT_BYTES:
                return None
        except OSError:
            return None
        pool = held.enter_context(ThreadPoolExecutor(1, thread_name_prefix="phasegate-verify"))
        return held.enter_context(self.store.scan()), pool

    def _part(self, conn: Any, part: list[str], deep: bool) -> _Checked:
        """`part` of a page (a run-id range), in its own read transaction on `conn`."""
        with self.store.read_on(conn):
            run_rows = self.store.runs.between(conn, part[0], part[-1])
            return self._page(conn, {rid: run_rows[rid] for rid in part if rid in run_rows}, deep)

    def _page(self, conn: Any, run_rows: dict[str, Any], deep: bool) -> _Checked:
        """In the read transaction `conn` holds, for these runs (a run-id
        range): each chain verified as it streams (one run's outputs in
        memory at a time), and their effect records in one query."""
        found = {
            rid: self._one(run_rows[rid], rows, deep)
            for rid, rows in self.store.checkpoints.live_chains(
                conn, {r: int(row.epoch) for r, row in run_rows.items()}
            )
        }
        by_run = self.store.effects.of_runs(conn, list(run_rows))
        damage = {
            rid: seals.check(by_run.get(rid, []), row.effects_last, row.effects_count, self.store.seal_key)
            for rid, row in run_rows.items()
        }
        decided = self.store.decisions.of_runs(conn, list(run_rows))
        sent = self.store.messages.of_runs(conn, list(run_rows))
        wrong = {
            rid: trail.check_decisions(
                decided.get(rid, []),
                row.decisions_last,
                row.decisions_count,
                self._policies,
                distinct,
                self.store.seal_key,
            )
            + trail.run_row(row, decided.get(rid, []))
            + trail.check_messages(sent.get(rid, []), self.store.seal_key)
            for rid, row in run_rows.items()
        }
        return run_rows, found, damage, wrong

    def _one(self, run: Any, rows: list[Any], deep: bool) -> VerifyReport:
        """One run's chain verified (and its stored inputs checked); its effect records are `_page`'s."""
        pause_point("in-verify", run.run_id)
        actual_inputs = _json.sha256(run.inputs_json)
        if actual_inputs != run.inputs_hash:
            # The same check the start sequence makes before it parses the inputs.
            v = chain.Verified(
                [],
                chain.IntegrityFailure(-1, None, "inputs", run.inputs_hash, actual_inputs, "stored inputs damaged"),
            )
        else:
            v = chain.verify_run(run, rows, parse_outputs=deep, key=self.store.seal_key)
        return VerifyReport(
            run.run_id,
            checkpoints=len(rows),
            bytes=sum(len(r.envelope) + len(r.output_json or "") for r in rows),
            failure=v.failure,
            lost=_lost_outputs(v),
        )

    def _record_integrity(self, run_id: str, reasons: list[BlockReason]) -> None:
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
                self.store.seal_key,
            )
            blocked = _json.loads(run.blocked_json or "[]")
            if any(b.get("kind") == "integrity" for b in blocked) and run.status == RunStatus.BLOCKED.value:
                if (run.frontier_phase, int(run.frontier_index), int(run.steps_done)) != (
                    fr.phase,
                    fr.index,
                    fr.steps_done,
                ):
                    self.store.runs.set_frontier(conn, run_id, fr.phase, fr.index, fr.steps_done)
                return
            self.store.runs.block(
                conn,
                run_id,
                {
                    "status": RunStatus.BLOCKED.value,
                    "blocked_json": _json.dumps([r.as_dict() for r in reasons]),
                    "attention": f"integrity: {reasons[0].detail}"[:300],
                    "updated_at": now,
                    **frontier_columns(fr),
                },
            )


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


def _integrity_reasons(report: VerifyReport) -> list[BlockReason]:
    """What verify records on a damaged run: the chain's failure, or else
    each effect record its history does not vouch for."""
    if report.failure is not None:
        f = report.failure
        return [BlockReason(BlockKind.INTEGRITY, f.detail(), {"failure": f.as_dict()})]
    return [
        BlockReason(BlockKind.INTEGRITY, d.detail, {"what": "effect", "effect": d.key, "problem": d.problem})
        for d in report.effects
    ] + [trail_reason(d) for d in report.decisions]


def _lost_outputs(v: chain.Verified) -> tuple[LostOutput, ...]:
    """Done phases of the trusted chain whose output cannot be had now: the
    chain verifies, but what it vouches for is gone (a stored copy lost, an
    archive deleted or altered)."""
    if all(e.row.output_state == "present" and e.row.output_json is not None for e in v.entries):
        return ()  # every output is at hand (`archive.why_lost`): no need to replay the chain to ask
    out = []
    for name, d in chain.fold(v.entries).done.items():
        why = archive.why_lost(d.entry)
        if why is not None:
            out.append(LostOutput(name, int(d.entry.row.seq), f"output of {name} is lost: {why}"))
    return tuple(out)
