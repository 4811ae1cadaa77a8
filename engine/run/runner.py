"""One execution of one run: the invariant start sequence, then the phases.

Every run starts the same way, whether or not anything was saved before:
take the lease, read the run's own records, verify them, apply the
operator's pending decisions, compare the world, check in-doubt effects and
floors, and only then run the phases that are still open. A fresh run is the
same path with an empty chain.

The runner holds only that sequence. What it composes:
- `RunJournal` (journal.py) writes the chain: checkpoints and markers;
- `EffectLedger` (ledger.py) and `StepLog` (steplog.py) record effects and
  durable steps, handed to each phase's `PhaseContext`;
- `Completions` (completions.py): effect completions waiting to ride with the
  run's next transaction; the runner commits them before the run's end;
- `plan_start` (planner.py) decides, purely, what the start does;
- `DecisionApplier` (applying.py) carries out the decisions it plans;
- `decisionsread.read` reads the decisions it plans from, and their damage;
- `RecordedCode` (recoding.py): which code the run's records were written
  by, the shape to store, and the open phases whose replay is checked.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from .. import _json
from .._host import new_owner
from .._pause import pause_point
from .._stop import Stop
from ..authoring import retry, sources
from ..authoring.retry import Attempt
from ..authoring.workflow import Phase, Workflow
from ..errors import HolderStalled, LeaseLost, RunHeld, StoreError, UsageError, WorkflowError
from ..history import trail
from ..ids import validate_run_id
from ..observe import hooks, logs
from ..outcome import BlockReason, Outcome
from ..states import Action, BlockKind, OutcomeStatus, RunStatus
from ..store.store import Duplicate, RunChange, Store
from ..waits import RetryLater
from . import codeversion, decisionsread, ending, environment, holds, parking, takeover, traceid
from .applying import DecisionApplier
from .asynccontext import AsyncPhaseContext
from .asyncdriver import PhaseLoop
from .completions import DEFAULT_DELAY, Completions
from .ending import RunEnd
from .journal import RunJournal
from .lease import FORCE_RISK, Fence, Heartbeat, HolderState, holder_name, holder_state
from .ledger import EffectLedger
from .mailbox import Mailbox
from .outputs import PhaseOutputs
from .parking import Park, Parking
from .phasecontext import PhaseContext
from .planner import StartFacts, StartPlan, plan_start
from .progress import Progress
from .recoding import RecordedCode, effects_since
from .stepcalls import refuse_coroutine
from .steplog import StepLog
from .stopping import STOPPED_PREFIX, Interrupted, StopRequest

#: A number of 19 digits or more: past what orjson parses as an integer
#: (it would come back as a float), so such inputs take the standard
#: library's parser (in a string too: slower, never wrong).
_LONG_NUMBER = re.compile(r"\d{19}")

log = logging.getLogger("phasegate.run")


class Runner:
    def __init__(
        self,
        store: Store,
        wf: Workflow,
        run_id: str,
        inputs: Any,
        *,
        inputs_given: bool,
        target: str | None,
        clock: Callable[[], float],
        lease_seconds: float,
        should_stop: Callable[[], bool] | None = None,
        force: bool = False,
        effect_flush: float = DEFAULT_DELAY,
        stop: StopRequest | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        distinct: trail.Distinct,
        park_seconds: float = parking.DEFAULT_PARK_SECONDS,
    ) -> None:
        if not isinstance(wf, Workflow):
            raise UsageError(f"{wf!r} is not a phasegate Workflow")
        if not wf.phases:
            # A run of nothing would complete at once and look like work done.
            raise WorkflowError(
                f"workflow {wf.name!r} declares no phases: declare each with @wf.phase (on the Workflow "
                "object) before running it"
            )
        self.store = store
        self._distinct = distinct
        """The one rule of "another operator" (oversight/identity.py), to check recorded seconds."""
        self.wf = wf
        self.run_id = validate_run_id(run_id)
        self.clock = clock
        self.lease_seconds = lease_seconds
        self.should_stop = should_stop
        """Asked between phases (legacy): True stops the run there."""
        self._asked_stop = stop
        """The caller's stop request (a signal, a worker's shutdown), forwarded to `stop`."""
        self.stop = StopRequest()
        """Asked at every step: stops the run at its next step (stopping.py);
        made by the caller's request or by an operator's hold (holds.py)."""
        self.parking = Parking(clock, park_seconds)
        """What this execution knows of the run's waits (parking.py)."""
        self._held: holds.Hold | None = None
        """A hold this start applied instead of running (a pause asked of a run whose process died)."""
        self._watch: holds.HoldWatch | None = None
        """This execution's look for an operator's hold (holds.py), while it runs."""
        self._answers: list[int] = []
        """Answer decisions waiting to be marked applied once the run goes on."""
        self._loops = PhaseLoop(loop)
        """Where async phases run (asyncdriver.py)."""
        self.inputs_given = inputs_given
        self.inputs_text = _json.dumps(inputs if inputs is not None else {})
        self._inputs_fast: tuple[str, bool] | None = None
        """(the inputs text it was decided for, whether orjson may parse it)."""
        self._sources_known: set[str] = set()
        """Code fingerprints `sources.remember` was asked about in this run."""
        self.target = target
        self.force = force
        """Take the run over even from a stalled holder (`HolderStalled`)."""
        self.code = codeversion.of(wf)
        """The code this attempt runs (codeversion.py), recorded when it takes the run up."""
        self.fence = Fence(store, self.run_id, new_owner(), clock)
        # Effect completions not yet committed: every write of the run carries them.
        self.completions = Completions(store, self.fence, effect_flush)
        self.progress = Progress(store, self.fence, clock)
        """The phases' progress reports (progress.py): they ride with the run's hot transactions."""
        self.completions.progress = self.progress
        self.steps = StepLog(store, self.fence, clock, self.completions)
        self.effects = EffectLedger(store, self.fence, clock, self.completions)
        self.ending = RunEnd(store, wf, self.fence, self.completions, clock)
        self.mailbox = Mailbox(store, self.fence, clock)
        """The run's messages, as its phases receive them (mailbox.py)."""
        """Where this execution's end is recorded (ending.py)."""
        self.outputs = PhaseOutputs(wf)
        self.phases_run: list[str] = []
        self.state: Any = None
        """The trusted state the phases run from (a `chain.Folded`), once planned."""
        self.env_rows: list[Any] = []
        self.notes: list[str] = []
        self._proposed: list[int] = []
        """Decisions proposed and waiting for a second operator, as last read."""
        self.attempts: list[Attempt] = []
        """Failed attempts of steps and phases in this start (retries)."""
        self._ran_without: dict[str, list[str]] = {}
        """Phases this start ran degraded, with the outputs they ran without."""
        self._reset_at = float("-inf")
        """When the run was last reset, as its decisions say (read by `_plan`)."""
        self.recorded = RecordedCode(wf)
        """Which code the run's records were written by (recoding.py): the shape to store, the replays to check."""

    # -- the start sequence ---------------------------------------------------

    def execute(self) -> Outcome:
        if self.store.schema_problem:
            # Nothing in a store we cannot interpret may be changed, not even a lease.
            reason = BlockReason(BlockKind.INTEGRITY, self.store.schema_problem, {"what": "schema"})
            return Outcome(self.run_id, OutcomeStatus.BLOCKED, blocked=[reason])
        try:
            row = self._acquire()
        except Duplicate:
            # Two processes created the same new run at once; the other won.
            row = self._acquire()
        if self._held is not None:
            return self._outcome(RunStatus.PAUSED if self._held.action is Action.PAUSE else RunStatus.CANCELLED)
        hooks.OBSERVER.acquired(self.run_id, row, self.fence.owner, partial(traceid.record, self.store, self.run_id))
        beat = Heartbeat(self.store, self.run_id, self.fence.owner, self.lease_seconds, self.clock)
        beat.start()
        self._watch = watch = holds.HoldWatch(self.store, self.run_id, self.stop)
        watch.start()
        asked = self._asked_stop
        forget = asked.on_request(lambda: self.stop.request(asked.why or "stopped")) if asked is not None else None
        try:
            try:
                return self._start(row)
            except Stop as stop:
                return self._block([stop.reason])
        except BaseException:
            # Stopped by an error (the store, a lost lease, a signal): record
            # the effects that did complete, if the lease still allows, then
            # give the lease up now, so the run reads as interrupted and can be
            # resumed at once, even while this process (a worker) lives on.
            beat.stop()
            self._flush_quietly()
            self.fence.release()
            raise
        finally:
            if forget is not None:
                forget()
            if self._watch is not None:
                self._watch.stop()
            self.completions.close()
            self.progress.close()
            beat.stop()
            self._loops.close()

    def _flush_quietly(self) -> None:
        try:
            self.completions.flush()
        except Exception as exc:  # noqa: BLE001 - they stay intents: in doubt at the next start, never repeated
            log.warning("run %s: effect completions not recorded: %s", self.run_id, exc)

    def _acquire(self) -> Any:
        owner = self.fence.owner
        with self.store.write() as conn:
            now = self.store.lease_clock(conn, self.clock())
            # Row lock where the backend has them; SKIP LOCKED so a process
            # racing another for the same run is answered at once, not queued.
            row = self.store.runs.get(conn, self.run_id, lock=True, skip_locked=True)
            if row is None and self.store.runs.get(conn, self.run_id) is not None:
                raise RunHeld(self.run_id, "another process taking it right now", self.lease_seconds)
            lease: RunChange = {
                "lease_owner": owner,
                "lease_host": owner.split(":")[0],
                "lease_pid": int(owner.split(":")[1]),
                "lease_expires_at": now + self.lease_seconds,
                "heartbeat_at": now,
            }
            if row is None:
                first = self.wf.phases[0].name if self.wf.phases else None
                self.store.runs.create(
                    conn,
                    {
                        "run_id": self.run_id,
                        "workflow": self.wf.name,
                        "target": self.target,
                        "inputs_json": self.inputs_text,
                        "inputs_hash": _json.sha256(self.inputs_text),
                        "shape_json": _json.dumps(self.wf.describe()),
                        "status": RunStatus.RUNNING.value,
                        "frontier_phase": first,
                        "phase_count": len(self.wf.phases),
                        "created_at": now,
                        "updated_at": now,
                        "code_json": codeversion.recorded(None, self.code, now),
                        **lease,
                    },
                )
                return self.store.runs.get(conn, self.run_id)
            if row.workflow != self.wf.name:
                raise UsageError(f"run {self.run_id!r} belongs to workflow {row.workflow!r}, not {self.wf.name!r}")
            if self.inputs_given and _json.sha256(self.inputs_text) != row.inputs_hash:
                raise UsageError(
                    f"run {self.run_id!r} already exists with other inputs; resume it without inputs or use a new run id"
                )
            held = holder_state(row, now)
            holds.refuse(row, self.run_id)
            if held is HolderState.LIVE:
                raise RunHeld(self.run_id, holder_name(row), (row.lease_expires_at or now) - now)
            if held is HolderState.STALLED and not self.force:
                raise HolderStalled(self.run_id, holder_name(row), "resume", FORCE_RISK)
            hold = holds.read(row.held_json)
            if hold is not None and hold.state == holds.ASKED:
                # A pause or cancel asked of a run whose process died before
                # it met it: it takes effect now, and nothing runs.
                holds.apply_now(self.store, conn, row, hold, now)
                holds.settle(self.store, conn, self.run_id, hold, "applied", now)
                self._held = hold
                return row
            self.fence.epoch = int(row.epoch)
            self.attempts.extend(self.parking.take_up(row))
            # The shape as this process declares it, but each phase's code as
            # recorded: it changes only once phases run with the new code
            # (`_start`), so a start that blocks leaves no trace in it.
            self.recorded.taken_up(row.shape_json)
            values: RunChange = {
                **lease,
                "status": RunStatus.RUNNING.value,
                "updated_at": now,
                "phase_count": len(self.wf.phases),
                "shape_json": self.recorded.shape_text(),
                # An earlier failure's error is history once the run is taken up again.
                "error_json": None,
                "wake_at": None,
                # A retry not yet met stays (see above); anything else it waited for is over.
                "waiting_json": row.waiting_json if self.parking.retry_pending else None,
                "code_json": codeversion.recorded(getattr(row, "code_json", None), self.code, now),
            }
            if (row.attention or "").startswith(STOPPED_PREFIX) or row.status == RunStatus.WAITING.value:
                values["attention"] = ""  # where an earlier stop left it: history once resumed
            if self.target and not row.target:
                values["target"] = self.target
            takeover.record(row, held, now, self.notes, values)  # issue 28: a dead holder's run taken over, said
            self.store.runs.take_up(conn, self.run_id, values)
            return row

    def _start(self, row: Any) -> Outcome:
        actual = _json.sha256(row.inputs_json)
        if actual != row.inputs_hash:
            # Damaged inputs must not be parsed, let alone run with.
            failure = {
                "seq": -1,
                "phase": None,
                "what": "inputs",
                "expected": row.inputs_hash,
                "actual": actual,
                "message": "stored inputs damaged",
            }
            reason = "the run's stored inputs do not match the hash they were saved with"
            return self._block([BlockReason(BlockKind.INTEGRITY, reason, {"failure": failure})])
        self.inputs_text = row.inputs_json
        inputs = _json.loads(row.inputs_json)
        journal = RunJournal(
            self.store,
            self.wf,
            self.fence,
            self.clock,
            epoch=int(row.epoch),
            inputs_hash=row.inputs_hash,
            completions=self.completions,
        )
        last_codes = self.recorded.start(row.shape_json)
        probes = environment.evaluate(self.wf, inputs=inputs)
        applier = DecisionApplier(self.store, journal, self.effects, self.fence, self.clock, probes)
        while True:
            plan = self._plan(journal, probes, last_codes)
            if plan.apply is None:
                break
            applier.apply(plan.apply)
            self.recorded.applied(plan.apply)
        self.env_rows = list(plan.env_rows)
        self.notes.extend(applier.notes + list(plan.notes))
        if plan.blocks:
            sources.remember_drift(self.store, self.wf, plan.blocks)
            return self._block(list(plan.blocks))
        applier.void(plan.void)
        if self._answers:
            applier.settle(self._answers)
        if self._proposed:
            with self.store.write() as conn:
                self.store.decisions.void_proposals(conn, self._proposed, self.clock())
        assert plan.state is not None  # a plan that runs has a state
        # An open phase whose code changed keeps its old fingerprint in the
        # shape until it is done: a later start (after a kill, or a wait) then
        # still checks its replay against what the old code saved (replay.py).
        recoded = self.recorded.running(plan.recode)
        shape = self.recorded.shape_text()
        if shape != row.shape_json:
            # Before any durable step is saved: the next start must know which
            # code wrote them, even if this process dies mid-phase.
            with self.store.write() as conn:
                if not self.store.runs.set_shape(conn, self.run_id, shape, self.fence.owner, self.clock()):
                    raise LeaseLost(f"run {self.run_id!r}: lease lost before its phases could start")
        self.state = plan.state
        journal.follow(plan.state)
        # A redo_on_rewind effect of a phase re-opened by a rewind or reset
        # gets a new key epoch, so its (idempotent) target acts again.
        epoch = int(row.epoch)
        self.effects.generations = {
            p.name: f"{epoch}.{plan.state.reopened.get(p.name, 0)}"
            for p in self.wf.phases
            if epoch or plan.state.reopened.get(p.name)
        }
        self.steps.follow_effects(effects_since(self.effects, plan.state, self._reset_at))
        if recoded:
            # Durable steps saved by older code of an open phase are handed back
            # only in the order that code made them (replay.py): the first call
            # that differs stops the run before any result is handed over.
            self.steps.recode(recoded)
        for p in plan.to_run:
            for n in p.needs:
                if n in plan.state.done:
                    self.outputs.available(plan.state, n)
        return self._run_phases(journal, list(plan.to_run), probes, inputs)

    def _plan(self, journal: RunJournal, probes: dict[str, Any], last_codes: dict[str, Any]) -> StartPlan:
        """Read the run's own records and ask the planner what to do next."""
        loaded = journal.load()
        self.effects.load()
        self.steps.load()
        read = decisionsread.read(self.store, self.run_id, self._distinct)
        self._reset_at = read.reset_at
        if not read.damage:
            self.parking.answers = Parking.answers_of(read.rows)
            self._answers = read.answers
        self._proposed = read.proposed
        return plan_start(
            StartFacts(
                wf=self.wf,
                verified=loaded.verified,
                rows=loaded.rows,
                pending=read.pending,
                effects=list(self.effects.effects.values()),
                effect_damage=self.effects.damage(),
                trail_damage=read.damage,
                probes=probes,
                now=self.clock(),
                last_codes=last_codes,
                damaged_records=lambda phases: self.steps.damaged(phases) + self.effects.damaged(phases),
                retrievable=self.outputs.available,
                stepped=self.steps.phases(),
            )
        )

    # -- running --------------------------------------------------------------

    def _run_phases(self, journal: RunJournal, to_run: list[Phase], probes: dict[str, Any], inputs: Any) -> Outcome:
        for i, p in enumerate(to_run):
            if self.stop.why is not None and not self._take_back_stop():
                return self._stopped(f"{self.stop.why} before phase {p.name}")
            if self.should_stop is not None and self.should_stop():
                return self._stopped(f"stopped by a shutdown before phase {p.name}")
            if p.probes:
                now_vals = environment.evaluate(self.wf, list(p.probes), inputs=inputs)
                moved = [
                    {"probe": k, "saved": probes.get(k), "current": v, "changed": True, "phases": [p.name]}
                    for k, v in now_vals.items()
                    if probes.get(k) != v
                ]
                if moved:
                    return self._block(
                        [BlockReason(BlockKind.ENV_MISMATCH, environment.describe(moved), {"changes": moved})]
                    )
            missing = {n for n in p.needs if n not in self.outputs}
            if missing:
                self._ran_without[p.name] = sorted(missing, key=lambda n: self.wf.get(n).index)
            self.phases_run.append(p.name)
            pause_point("in-phase", p.name)
            # A process frozen between phases must not start one it no longer
            # holds: its code may do things no fence can see.
            self.fence.ensure()
            log.info(
                "run %s: phase %s starts%s", self.run_id, p.name, f" (missing {sorted(missing)})" if missing else ""
            )
            while True:
                try:
                    with logs.bound(phase=p.name):
                        called = hooks.OBSERVER.phase(
                            self.run_id, self.wf.name, p.name, partial(self._attempt_phase, p, missing)
                        )
                except Interrupted as stop:
                    if self._take_back_stop():
                        # The pause it stopped for was withdrawn before it was met:
                        # the phase goes on from its start, its saved work returned.
                        self.steps.load()
                        self.effects.load()
                        continue
                    return self._stopped(stop.reason)
                except Park as park:
                    return self._park(park)
                break
            if isinstance(called, Outcome):
                return called
            out, ctx = called
            try:
                encoded = _json.encode(out)
            except UsageError as exc:
                return self._fail(p.name, exc)
            nxt = to_run[i + 1] if i + 1 < len(to_run) else None
            next_needs = {n: self.outputs.hashes[n] for n in (nxt.needs if nxt else ()) if n in self.outputs.hashes}
            out_hash = _json.sha256(encoded.data)
            text = encoded.text
            if nxt is not None and p.name in nxt.needs:
                next_needs[p.name] = out_hash
            if p.code_hash not in self._sources_known:
                # Asked once a run per fingerprint: the store's answer does not change.
                sources.remember(self.store, self.wf.phases, self.clock, needed=p)
                self._sources_known.add(p.code_hash)
            # The checkpoint clears the stored progress; a report not yet
            # written must not land after it (progress.py).
            self.progress.end_phase(p.name)
            journal.checkpoint(
                p,
                text,
                steps_done=ctx.steps_done,
                missing=sorted(missing),
                nxt=nxt,
                next_needs=next_needs,
                probes=probes,
                out_hash=out_hash,
            )
            self.outputs.put(p.name, text, encoded, out_hash)
            # Its bytes are done with: not kept alive through the next phase
            # (at 1 MB a buffer held across the call cost fresh pages each boundary).
            del encoded
        return self._complete()

    def _attempt_phase(self, p: Phase, missing: set[str]) -> tuple[Any, PhaseContext | AsyncPhaseContext] | Outcome:
        """Call the phase; while its retry policy allows, call it again from
        its start after a failure. What a failed attempt saved is read back
        first, so its durable steps return from the store and its completed
        effects are not repeated (an effect it left unfinished against a
        target that does not deduplicate stops the run as in doubt)."""
        attempt = 1
        resumed = self.parking.resumed_retry(p.name, None)
        if resumed is not None:
            # The phase parked for a `RetryLater`: this is its next attempt, once due.
            attempt = resumed[0] + 1
            if not self.stop.sleep(resumed[1]):
                assert self.stop.why is not None
                raise Interrupted(f"{self.stop.why} in phase {p.name}, before its attempt {attempt}")
        while True:
            # Each attempt gets its own copy of the inputs and the outputs it
            # needs: a phase that mutates them must not change what a later
            # attempt, phase or resume sees.
            kind = AsyncPhaseContext if p.is_async else PhaseContext
            ctx = kind(
                self.run_id,
                p.name,
                self._inputs_copy(),
                frozenset(missing),
                steps=self.steps,
                effects=self.effects,
                attempts=self.attempts,
                stop=self.stop,
                parking=self.parking,
                mailbox=self.mailbox,
                progress=self.progress,
            )
            wait: float | None = None
            try:
                return self._call_phase(p, ctx, missing), ctx
            except (Stop, LeaseLost, StoreError, KeyboardInterrupt, Interrupted, Park):
                # The store failing is not the phase failing (exit 2,
                # resumable); Ctrl-C and a stop are the operator's, not the phase's.
                raise
            except UsageError as exc:
                # The author's mistake (an async function in a sync phase): retrying cannot help.
                return self._fail(p.name, exc)
            except RetryLater as exc:
                wait = self.parking.phase_retry(p.name, p.retry, exc, attempt, self.attempts)
                if wait is None:
                    return self._fail(p.name, exc)
                log.warning("run %s: phase %s attempt %d: %s", self.run_id, p.name, attempt, exc)
            except Exception as exc:  # noqa: BLE001 - a phase's failure is the run's outcome, not ours
                again = p.retry.retryable(exc, attempt)
                if again or attempt > 1:
                    self.attempts.append(Attempt(p.name, None, attempt, p.retry.attempts, retry.describe(exc), again))
                if not again:
                    return self._fail(p.name, exc)
                log.warning("run %s: phase %s attempt %d failed: %s", self.run_id, p.name, attempt, exc)
            except BaseException as exc:  # noqa: BLE001 - SystemExit, CancelledError: recorded, never retried
                return self._fail(p.name, exc)
            if not self.stop.sleep(p.retry.delay(attempt) if wait is None else wait):
                assert self.stop.why is not None
                raise Interrupted(f"{self.stop.why} in phase {p.name}, before its attempt {attempt + 1}")
            self.steps.load()
            self.effects.load()
            attempt += 1

    def _call_phase(self, p: Phase, ctx: PhaseContext | AsyncPhaseContext, missing: set[str]) -> Any:
        """Call the phase function: a sync one here, an async one in its loop (asyncdriver.py)."""
        handed = self.outputs.kwargs(p, missing)
        if isinstance(ctx, AsyncPhaseContext):
            return self._loops.run(lambda: p.fn(ctx, **handed), ctx, self.stop)
        try:
            out = p.fn(ctx, **handed)
        finally:
            ctx._close()
        refuse_coroutine(f"phase {p.name!r}", out)
        return out

    def _take_back_stop(self) -> bool:
        """Whether a stop this run's hold watch requested may be taken back (an
        unpause withdrew the hold, nothing else asked): then the run goes on, with a new stop and watch."""
        watch = self._watch
        asked = self._asked_stop
        if watch is None or watch.seen is None or (asked is not None and asked.why is not None):
            return False
        if (self.should_stop is not None and self.should_stop()) or not holds.withdrawn(self.store, self.run_id):
            return False
        log.info("run %s: the %s it stopped for was withdrawn; it goes on", self.run_id, watch.seen.action.value)
        watch.stop()
        self.stop = StopRequest()
        self._watch = holds.HoldWatch(self.store, self.run_id, self.stop)
        self._watch.start()
        return True

    def _stopped(self, reason: str) -> Outcome:
        """A stop was asked for: the run is left interrupted, resumable, its
        lease released, with where it stopped as its reason (or, when an
        operator's hold asked for it, paused or cancelled: holds.py)."""
        final = self._finish(RunStatus.RUNNING, {"attention": reason[:300]})
        if final is not RunStatus.RUNNING:
            return self._outcome(final)
        log.info("run %s: %s; resume it", self.run_id, reason)
        return Outcome(self.run_id, OutcomeStatus.INTERRUPTED, phases_run=self.phases_run, stopped=reason)

    def _park(self, park: Park) -> Outcome:
        """The run waits without its process: for an answer, a time or a
        rate limit (parking.py). A worker wakes it at `park.until` (an
        answer, as any decision, wakes it at once)."""
        line = parking.attention(park.waiting)
        if self.parking.refused:
            # An answer the question's type refused is void: the question is open again.
            with self.store.write() as conn:
                for d in self.parking.refused:
                    self.store.decisions.settle(conn, d, "void", self.clock())
            log.warning("run %s: %s", self.run_id, "; ".join(self.parking.refused.values()))
        final = self._finish(RunStatus.WAITING, park.columns(self.attempts, line))
        if final is not RunStatus.WAITING:
            return self._outcome(final)
        log.info("run %s: %s", self.run_id, line)
        return Outcome(
            self.run_id, OutcomeStatus.WAITING, phases_run=self.phases_run, stopped=line, waiting=park.waiting
        )

    def _outcome(self, final: RunStatus) -> Outcome:
        """The outcome of an execution an operator's hold ended (paused or cancelled)."""
        out = self.ending.held(final, self.phases_run)
        log.info("run %s: %s", self.run_id, out.stopped)
        return out

    def _inputs_copy(self) -> Any:
        """A fresh parse of the run's inputs (canonical text, hash-checked
        at the start): orjson's, which gives the same value where no number
        is too long for it (~1 us saved a phase even on `{}`)."""
        text = self.inputs_text
        if self._inputs_fast is None or self._inputs_fast[0] is not text:
            self._inputs_fast = (text, _LONG_NUMBER.search(text) is None)
        return _json.loads_shallow(text) if self._inputs_fast[1] else _json.loads(text)

    # -- endings --------------------------------------------------------------

    def _finish(self, status: RunStatus, values: RunChange, *, stopped: bool = False) -> RunStatus:
        """Record the run's end (ending.py); the status recorded, or paused or cancelled by a hold."""
        try:
            # A phase that stops midway (fails, blocks, parks, is stopped) keeps
            # its latest report as the run's last-known progress (progress.py).
            self.progress.flush()
        except Exception as exc:  # noqa: BLE001 - progress is advisory: the end is recorded without it
            log.warning("run %s: progress not recorded: %s", self.run_id, exc)
        base: RunChange = {
            "env_json": _json.dumps(self.env_rows),
            "notes_json": _json.dumps(self.notes + [a.note() for a in self.attempts]),
            "shape_json": self.recorded.shape_text(),
        }
        return self.ending.record(status, values, base, stopped=stopped, retry_pending=self.parking.retry_pending)

    def _block(self, reasons: list[BlockReason]) -> Outcome:
        first = reasons[0]
        final = self._finish(
            RunStatus.BLOCKED,
            {
                "blocked_json": _json.dumps([r.as_dict() for r in reasons]),
                "attention": f"{first.kind}: {first.detail}"[:300],
                "error_json": None,
            },
            stopped=True,
        )
        if final is not RunStatus.BLOCKED:
            return self._outcome(final)
        log.warning("run %s blocked: %s", self.run_id, "; ".join(str(r) for r in reasons))
        return Outcome(self.run_id, OutcomeStatus.BLOCKED, blocked=reasons, phases_run=self.phases_run)

    def _fail(self, phase: str, exc: BaseException) -> Outcome:
        err = ending.failure(phase, exc, self.attempts)
        message = err["message"]
        final = self._finish(
            RunStatus.FAILED,
            {
                "error_json": _json.dumps(err),
                "blocked_json": "[]",
                "attention": f"failed in {phase}: {type(exc).__name__}: {message}"[:300],
            },
            stopped=True,
        )
        if final is not RunStatus.FAILED:
            return self._outcome(final)
        log.error("run %s failed in %s: %s: %s", self.run_id, phase, type(exc).__name__, message)
        return Outcome(self.run_id, OutcomeStatus.FAILED, error=err, phases_run=self.phases_run)

    def _complete(self) -> Outcome:
        last = self.wf.phases[-1].name if self.wf.phases else None
        result = None
        if last is not None and (last in self.outputs or self.outputs.available(self.state, last)):
            result = self.outputs.handed(last)
        gaps = ending.gaps(self.wf, self.state, self._ran_without)
        attention = f"completed (degraded): {gaps}"[:300] if gaps else ""
        self._finish(RunStatus.COMPLETED, {"blocked_json": "[]", "attention": attention, "error_json": None})
        log.info("run %s completed%s", self.run_id, f" ({attention})" if gaps else "")
        return Outcome(self.run_id, OutcomeStatus.COMPLETED, result=result, phases_run=self.phases_run, degraded=gaps)
