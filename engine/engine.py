"""The engine's front door: run a workflow, decide on a stopped run, read a
run's status, verify and prune the store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ._dbpath import default_db
from .authoring.workflow import Workflow
from .decide import fit as _fit
from .decide import preview as _previews
from .decide import sending as _sending
from .decide.batch import Options
from .decide.desk import Desk
from .decide.gate import Oversight
from .decide.triage import Triage
from .errors import UsageError
from .history import archive, keys
from .history import prune as _prune
from .outcome import Outcome
from .oversight.identity import distinct
from .run import callers
from .run.runner import Runner
from .run.stopping import StopRequest
from .settings import Settings
from .states import Action
from .store.store import ChangeProbe, Store
from .upkeep.pruning import Pruner
from .upkeep.reports import PolicyReport, UnknownSchema, UnmarkedStore, VerifyReport
from .upkeep.resealing import Resealed, reseal
from .upkeep.verify import Verifier
from .viewing import Viewer
from .views import follow as _follow
from .views import listing, patches, runspage
from .views.models import RunSummary, RunView
from .views.patches import PatchReport
from .views.runspage import RunsPage
from .views.workers import WorkerView, list_workers


class Engine:
    """A phasegate store and the operations on it.

    Use it as a context manager (`with Engine("jobs.db") as eng:`), or call
    `close`. Each setting not given is read from its environment variable
    (docs/reference/configuration.md), and every one is checked before any
    store is opened.

    Args:
        db: An SQLite file path, or an SQLAlchemy URL (`postgresql://...`);
            None: `$PHASEGATE_DB`, else `./phasegate.db`.
        clock: The time, in UNIX seconds: injectable so tests and snapshots
            can freeze it.
        lease_seconds: How long a run's lease lasts unrenewed
            (`PHASEGATE_LEASE_SECONDS`, 30).
        retention_days: Days a completed run is kept whole before it becomes a
            prune candidate (`PHASEGATE_RETENTION_DAYS`, 30).
        archive_dir: Where pruning exports what it archives
            (`PHASEGATE_ARCHIVE_DIR`; beside an SQLite store by default).
        claim_seconds: How long an operator's claim lasts
            (`PHASEGATE_CLAIM_SECONDS`, 7200).
        create: Create the store if it does not exist.
        readonly: Open the store read-only (an SQLite file at the file level):
            nothing is written, not even an upgrade.
        effect_flush: Seconds an effect's completion may wait to commit with
            the run's next transaction (`PHASEGATE_EFFECT_FLUSH_MS` / 1000).
        park_seconds: A wait at least this long parks the run instead of
            sleeping in its process (`PHASEGATE_PARK_SECONDS`, 30).

    Raises:
        UsageError: A setting that is not a number or is out of its range.
        StoreError: The store cannot be opened, is not a phasegate store, or
            (read-only) is of an older schema version.
    """

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
        park_seconds: float | None = None,
    ) -> None:
        # Settings first: a bad one is refused before any store is created.
        settings = Settings.read(
            lease_seconds=lease_seconds,
            effect_flush=effect_flush,
            retention_days=retention_days,
            claim_seconds=claim_seconds,
            archive_dir=archive_dir,
            park_seconds=park_seconds,
        )
        self.park_seconds = settings.park_seconds
        """A wait at least this long parks the run (`ctx.sleep`, `ctx.ask`, `RetryLater`)."""
        self.lease_seconds = settings.lease_seconds
        """How long a run's lease lasts unrenewed, in seconds."""
        self.effect_flush = settings.effect_flush
        """Seconds an effect's completion may wait to commit with the run's next
        transaction (0: committed before `ctx.effect` returns)."""
        self.retention_days = settings.retention_days
        """Days a completed run is kept whole before it becomes a prune candidate."""
        self.claim_seconds = settings.claim_seconds
        """How long an operator's claim on a run lasts, in seconds."""
        self.store = Store(
            db if db is not None else default_db(), create=create, readonly=readonly, lease_seconds=self.lease_seconds
        )
        """The store: its database and a repository per table (internal)."""
        self.clock = clock
        """The time, in UNIX seconds."""
        self.should_stop: Callable[[], bool] | None = None
        """Checked between phases; when it returns True the run stops cleanly,
        resumable, with its lease released (legacy: `stop_request` stops at the next step)."""
        self.stop_request: StopRequest | None = None
        """Asked at every step of every run: once requested, a run stops at its
        next `ctx.step` or `ctx.effect` (an async phase: at its next await),
        resumable, with where it stopped as its reason (run/stopping.py)."""
        self.archive_dir = archive.archive_dir(self.store.path, settings.archive_dir)
        """The folder pruning exports to, made absolute."""
        self._view = Viewer(self.store, self.retention_days)
        self._oversight = Oversight(self.store, clock, self._view, self.claim_seconds)
        self._triage = Triage(self.store, clock, self._view, self._oversight)
        self._desk = Desk(self.store, clock, self._view, self._oversight)
        self._verifier = Verifier(self.store, clock)
        self._pruner = Pruner(self.store, clock, self.retention_days, self.archive_dir)

    @property
    def oversight(self) -> Oversight:
        """Claims, the store's policy and seconds (decide/gate.py)."""
        return self._oversight

    @property
    def triage(self) -> Triage:
        """Causes, and one decision for many runs (triage.py)."""
        return self._triage

    def close(self) -> None:
        """Close the store's connections (leaving the `with` block does it)."""
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

        Async phases run in an event loop of the run's own. Called from a
        thread whose event loop is running (an `async def` request handler),
        the run goes on in a thread of its own, so that its phases may use
        `asyncio.run`; from async code, prefer `await Engine.arun(...)`.

        Args:
            wf: The workflow.
            run_id: The run's id: a new one starts a run, a known one continues it.
            inputs: The run's inputs (JSON values). For a run that exists, None
                (or the same inputs) continues it with its stored ones.
            target: Where `phasegate resume` and the worker load the workflow
                again (`path/to/file.py:NAME` or `package.module:NAME`),
                stored with the run; the command line passes it for you.
            force: Take the run over from a stalled holder (`HolderStalled`):
                it may wake inside an effect's call and finish it.

        Returns:
            How this call ended: completed (with the result), blocked (with the
            reasons, for an operator), failed (with the error), or interrupted
            (stopped on request at a step, `Outcome.stopped` says where). A
            block or a failure is an outcome, not an exception.

        Raises:
            UsageError: `wf` is not a `Workflow`, the run id or the inputs are
                not acceptable, or other inputs are given for a run that exists.
            RunHeld: Another live process holds the run.
            HolderStalled: Its holder is stalled and `force` is not given.
            LeaseLost: This process lost the run's lease while running it; it
                stopped, recording nothing more.
            StoreError: The store cannot be used.
        """
        return callers.execute(
            self._runner(wf, run_id, inputs, target=target, force=force, stop=self.stop_request, loop=None)
        )

    async def arun(
        self, wf: Workflow, run_id: str, inputs: Any = None, *, target: str | None = None, force: bool = False
    ) -> Outcome:
        """`run`, awaited from a running event loop.

        The start sequence and sync phases run in a worker thread; each async
        phase runs on this loop, so the application's clients work in it, and
        the loop waits for nothing but one commit at a time. Cancelling the
        awaiting task stops the run at its next step (as a signal would),
        after its finished work is recorded; then the cancellation goes on.

        Args:
            wf: the workflow.
            run_id: the run's id.
            inputs: the run's inputs (a new run); None resumes with the stored ones.
            target: where the workflow is loaded from, stored with the run.
            force: take the run over from a stalled holder.

        Returns:
            How this execution ended.

        Raises:
            UsageError: as `run`.
            RunHeld: as `run`.
            HolderStalled: as `run`.
            StoreError: as `run`.
        """

        def make(stop: StopRequest, loop: asyncio.AbstractEventLoop) -> Runner:
            return self._runner(wf, run_id, inputs, target=target, force=force, stop=stop, loop=loop)

        return await callers.execute_awaited(make, self.stop_request)

    def _runner(
        self,
        wf: Workflow,
        run_id: str,
        inputs: Any,
        *,
        target: str | None,
        force: bool,
        stop: StopRequest | None,
        loop: asyncio.AbstractEventLoop | None,
    ) -> Runner:
        return Runner(
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
            stop=stop,
            loop=loop,
            distinct=distinct,
            park_seconds=self.park_seconds,
        )

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
        result: Any = _fit.NO_RESULT,
        force: bool = False,
        expect_env: str | None = None,
        override_claim: bool = False,
        question: str | None = None,
        value: Any = _fit.NO_VALUE,
    ) -> _fit.Decision:
        """Record an operator's decision on a stopped run. It is checked against
        the run as it is inside the recording transaction (`fit` (decide/fit.py)),
        kept forever, and applied at the next `run` of that id; a reset is
        applied at once (applying.py), since it archives the state.
        Recording it revokes the run's lease (a stalled holder's, the only one
        a decision can meet): whatever that process does when it wakes is
        fenced off. An action the store's policy lists is only *proposed*
        (state "proposed"): nothing changes until another operator seconds it
        (`phasegate decide RUN second`).

        `answer` answers the question a run asked (`ctx.ask`): the value is
        checked against the question's schema, and a worker resumes the run
        with it. `pause` and `cancel` fit a running run too: it stops at its
        next step (run/holds.py); a stopped one is paused or cancelled at
        once. `unpause` puts a paused run back where it was.

        Args:
            run_id: The run.
            action: approve, degrade, rewind, reset, confirm_effect,
                retry_effect, answer, pause, unpause or cancel.
            reason: Why, in the operator's words (required, stored forever).
            operator: Who decides; None: `$PHASEGATE_OPERATOR`, else the login name.
            phase: For rewind: the phase to re-run from.
            effect: For confirm_effect and retry_effect: the effect's full key,
                `phase/name` or name, naming exactly one effect.
            result: For confirm_effect (required): what the outside system
                returned; None is JSON null, `NO_RESULT` means none was given.
            force: Answer a stalled holder's in-doubt effect.
            expect_env: For approve: the `env_hash` of the preview the operator
                saw; refused if the run's changed values differ now.
            override_claim: Decide on a run someone else claimed.
            question: For answer: the question's name (or `phase/name`).
            value: For answer (required): the answer, JSON; None is JSON null,
                `NO_VALUE` means none was given.

        Returns:
            The decision as recorded ("pending", "applied" for a reset, or
            "proposed").

        Raises:
            RunNotFound: No run `run_id`.
            UsageError: An unknown action, an empty reason, an option the action
                does not take, or an `effect` that names no effect or several.
            DecisionError: The decision does not fit why the run stopped, or
                the run moved since (`expect_env`); `AlreadyDecided` on top of
                a pending one.
            HolderStalled: An effect decision against a stalled holder without `force`.
            ClaimedByOther: Someone else claimed the run and `override_claim` is not given.
        """
        opts = Options(phase, effect, result, force, expect_env, question, value)
        return self._desk.decide(
            run_id, action, reason=reason, operator=operator, options=opts, override_claim=override_claim
        )

    def propose(
        self,
        run_id: str,
        action: str,
        *,
        reason: str,
        assistant: str,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _fit.NO_RESULT,
        question: str | None = None,
        value: Any = _fit.NO_VALUE,
    ) -> _fit.Decision:
        """Record a decision an AI assistant proposes (`phasegate mcp`): fitted
        as `decide` fits it, and recorded "proposed" whatever the store's
        policy says, so nothing happens until a person seconds it
        (`phasegate decide RUN second --decision N`); a second from the
        assistant's identity is refused. It overrides no claim (the person who
        seconds it answers to the claim) and answers no stalled holder.

        Args:
            run_id: The run.
            action: As `decide` takes it.
            reason: Why, in the assistant's words (required, stored forever).
            assistant: The assistant's operator name ("mcp:claude-ai").
            phase: As `decide` takes it.
            effect: As `decide` takes it.
            result: As `decide` takes it.
            question: As `decide` takes it.
            value: As `decide` takes it.

        Returns:
            The decision as recorded, in state "proposed".

        Raises:
            RunNotFound: No run `run_id`.
            UsageError: As `decide` raises it.
            DecisionError: As `decide` raises it; `AlreadyDecided` when the same
                action is proposed already.
            HolderStalled: An effect decision against a stalled holder.
        """
        opts = Options(phase, effect, result, question=question, value=value)
        return self._desk.propose(run_id, action, reason=reason, assistant=assistant, options=opts)

    def send(self, run_id: str, topic: str, value: Any, *, reason: str, operator: str | None = None) -> _sending.Sent:
        """Send a message into a run: a phase's `ctx.recv(topic)` receives it
        (oldest first per topic, exactly once), and a run parked on that
        topic is woken through a worker (decide/sending.py).

        Args:
            run_id: The run.
            topic: The topic a phase receives it on.
            value: The message, JSON; checked against the schema the run
                recorded for the topic, when it has waited on it.
            reason: Why, in the sender's words (required, stored forever).
            operator: Who sends it; None: `$PHASEGATE_OPERATOR`, else the login name.

        Returns:
            The message as recorded.

        Raises:
            RunNotFound: No run `run_id`.
            UsageError: An empty reason, a bad topic, or a value that is not
                JSON or that the topic's schema refuses (nothing recorded).
            MessageRefused: The run is completed or cancelled (nothing recorded).
        """
        return self._desk.send(run_id, topic, value, reason=reason, operator=operator)

    # -- reading --------------------------------------------------------------

    def status(self, run_id: str) -> RunView:
        """One run in full, as `phasegate status RUN` shows it.

        Args:
            run_id: The run.

        Returns:
            Its view, read from the store alone (`RunView.to_json` is `status --json`).

        Raises:
            RunNotFound: No run `run_id`.
        """
        with self.store.read() as conn:
            return self._view(conn, self.store.runs.need(conn, run_id), self.clock())

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
        None). Every page costs the same, wherever it is in the list.

        Args:
            limit: At most this many lines; None: all.
            offset: Lines to skip after those read (for small lists only).
            statuses: Only runs whose stored status is one of these.
            text: Only runs whose id, workflow or reason contains it.
            order: "attention", or a column: run_id, workflow, status,
                frontier, last_checkpoint_at; a "-" prefix descends.
            after: A line's `sort_key` from a page read in the same order.
            inclusive: With `after`: the page starts at that line.
            backward: The page before `after` (the last page when it is None).

        Returns:
            The page's lines, in order; a damaged row is a line that says so.
        """
        return listing.page(
            self.store,
            self.clock(),
            limit=limit,
            offset=offset,
            statuses=statuses,
            text=text,
            order=order,
            after=after,
            inclusive=inclusive,
            backward=backward,
        )

    def runs_page(
        self,
        *,
        limit: int,
        statuses: Sequence[str] | None = None,
        text: str | None = None,
        order: str = "attention",
        where: runspage.Where = "first",
        anchor: Sequence[Any] | None = None,
        offset: int = 0,
        selected: str | None = None,
    ) -> RunsPage:
        """A page of the runs list and everything a screen shows with it,
        read in ONE snapshot of the store (`views/runspage.py`): the page,
        the matching total, the counts, the workers alive, the page's claims
        and proposals, and the `selected` run in full. Paged by keyset, as `runs`.

        Args:
            limit: Lines per page.
            statuses: Only runs whose stored status is one of these.
            text: Only runs whose id, workflow or reason contains it.
            order: As `runs` takes it.
            where: "first", "next" (after `anchor`), "previous" (before it),
                "reload" (from it, inclusive) or "last".
            anchor: `RunsPage.last_key` for "next", `first_key` for
                "previous" and "reload"; None reads the first page.
            offset: Where the page the anchor came from starts in the list.
            selected: A run to read in full besides (a screen's cursor), or None.

        Returns:
            The page, as one state of the store.

        Raises:
            StoreError: The store cannot be read.
        """
        return runspage.read(
            self.store,
            self.clock(),
            limit=limit,
            statuses=statuses,
            text=text,
            order=order,
            where=where,
            anchor=anchor,
            offset=offset,
            selected=selected,
            view_of=self._view,
            secondable_of=lambda conn, view: self._oversight.secondable(view, conn=conn),
        )

    def count_runs(self, *, statuses: Sequence[str] | None = None, text: str | None = None) -> int:
        """How many runs `runs` would list with these filters (the console pages with it).

        Args:
            statuses: As `runs` takes them.
            text: As `runs` takes it.

        Returns:
            The count.
        """
        with self.store.read() as conn:
            return self.store.runs.count_matching(conn, statuses=statuses, text=text)

    def counts(self) -> dict[str, int]:
        """Runs by status as an operator sees it (a dead holder's run counts
        as interrupted). Reads one grouped count plus the running rows whose
        holder may be gone (a lapsed lease, or one held from this host).

        Returns:
            Status name -> how many runs are in it (statuses with none left out).
        """
        return listing.counts(self.store, self.clock())

    def allowed_actions(self, run: RunView | str) -> list[Action]:
        """The decisions that fit this run now (the console offers only these).

        Args:
            run: The run's id, or its view already read (to ask several
                questions of one read).

        Returns:
            The actions `decide` would not refuse as unfit, in `Action` order.

        Raises:
            RunNotFound: No run with that id.
        """
        return _fit.allowed_actions(run if isinstance(run, RunView) else self.status(run))

    def preview(
        self,
        run: RunView | str,
        action: str,
        *,
        phase: str | None = None,
        effect: str | None = None,
        result: Any = _fit.NO_RESULT,
        reason: str | None = None,
        force: bool = False,
        expect_env: str | None = None,
        question: str | None = None,
        value: Any = _fit.NO_VALUE,
    ) -> _previews.Preview:
        """What a decision would do, without recording it; refused exactly
        as `decide` would refuse it, in the same order (`phasegate decide
        --dry-run`).

        Args:
            run: The run's id, or its view already read.
            action: As `decide` takes it.
            phase: As `decide` takes it.
            effect: As `decide` takes it.
            result: As `decide` takes it.
            reason: When given, checked as `decide` checks it.
            force: As `decide` takes it.
            expect_env: As `decide` takes it.
            question: As `decide` takes it.
            value: As `decide` takes it.

        Returns:
            What the decision would do: the phases that run again, the effects
            that could be called again, what is set aside and what is kept; for
            an approval, the values it accepts and their `env_hash`.

        Raises:
            RunNotFound: No run with that id.
            UsageError: As `decide` raises it.
            DecisionError: As `decide` raises it.
            HolderStalled: As `decide` raises it.
        """
        opts = Options(phase, effect, result, force, expect_env, question, value)
        return self._desk.preview(run, action, reason=reason, options=opts)

    def run_ids(self) -> Iterator[str]:
        """Every run's id, in order, read a page at a time.

        Yields:
            Each run id.
        """
        return listing.ids(self.store)

    def follow(
        self, run_id: str, *, since: float | None = None, poll: float = 1.0
    ) -> AsyncIterator[_follow.FollowEvent]:
        """A run's steps, effects, checkpoints, progress, status changes and
        decisions as they commit (`phasegate follow RUN`), until it ends.

        An async iterator: `async for event in engine.follow(run_id)`. It reads
        the run's own rows only, each once, in a worker thread, at each change
        the store's feed notices (file events on SQLite, LISTEN/NOTIFY on
        PostgreSQL) and every `poll` seconds anyway (views/follow.py).

        Args:
            run_id: The run.
            since: Only events at or after this time (UNIX seconds); None: from the run's start.
            poll: Seconds between reads when no change is noticed.

        Returns:
            The events (`FollowEvent`: frozen dataclasses with `to_json` and `said`),
            oldest first; it stops after the run completes, fails or is cancelled.

        Raises:
            RunNotFound: No run `run_id` (raised here, before any iteration).
        """
        with self.store.read() as conn:
            self.store.runs.need(conn, run_id)
        return _follow.follow(self.store, run_id, self.clock, self.data_version, since=since, poll=poll)

    def data_version(self) -> ChangeProbe:
        """A probe whose `changed()` says whether another connection committed
        since it was last asked (SQLite's data_version; PostgreSQL's LISTEN).

        Returns:
            A new probe, for one thread (`phasegate.ops.watch_store` makes one).
        """
        return self.store.changes.probe()

    def patch_status(self, patch_id: str) -> PatchReport:
        """Which live runs take a patch's old path, and which may still
        (`phasegate status --patch ID`; `ctx.patched`, run/patches.py).

        Args:
            patch_id: The patch's name.

        Returns:
            The report: the runs on the old path, how many on the new one,
            the runs of its workflows that have not reached it yet, and
            whether the old path can go.

        Raises:
            UsageError: the id is not a name a patch could have.
        """
        return patches.report(self.store, patch_id)

    def workers(self) -> list[WorkerView]:
        """The workers that recorded a heartbeat, most recently seen first,
        each with whether it is alive now (`workers.is_alive`).

        Returns:
            The workers (`phasegate workers`).
        """
        return list_workers(self.store, self.clock)

    @property
    def db_file(self) -> Path | None:
        """The SQLite database file, or None for a PostgreSQL store: what
        `watch_store` watches for commits, without reaching into the store."""
        return self.store.path

    # -- upkeep: verification and pruning (upkeep/) ---------------------------

    def seal_kind(self) -> str:
        """Which kind of seal the store carries, in a line: plain hashes, or
        HMACs under a key (its id), and whether this process holds that key.

        Returns:
            The line `phasegate verify` prints.
        """
        return keys.describe_seal(self.store.store_key_id, self.store.held_key)

    def verify(
        self, run_id: str | None = None, *, record: bool = True, deep: bool = False
    ) -> list[VerifyReport | UnknownSchema | PolicyReport | UnmarkedStore]:
        """Verify the stored chain of every run (or one): every hash and link
        over the stored bytes, and with `deep` every output parsed too (a
        resume parses what it reads anyway). A failure found in a stopped run
        is recorded on it with `record`, so operators see it before anything
        runs. How the store is read is `upkeep.verify.Verifier`'s.

        Args:
            run_id: One run; None: every run.
            record: Record a failure found in a stopped run on that run.
            deep: Also parse every stored output.

        Returns:
            A `VerifyReport` for each run, in run-id order; for a store whose
            schema this engine does not know, one `UnknownSchema` alone.

        Raises:
            RunNotFound: No run `run_id`.
        """
        return self._verifier.verify(run_id, record=record, deep=deep)

    def reseal(self, key_file: str | None) -> Resealed:
        """Seal every record of the store anew under the key in `key_file`
        (None: plain hashes, no key): turning a key on, rotating it, or off.
        The engine must hold the store's current key (`PHASEGATE_SEAL_KEY_FILE`).

        Args:
            key_file: The new key file (0600, this user's), or None.

        Returns:
            What was sealed, and the old and new key ids.

        Raises:
            UsageError: the new key file is not usable.
            StoreError: the store is damaged, or this engine lacks its key.
        """
        new = keys.load_seal_key(key_file, keys.RESEAL_KEY_FLAG) if key_file else None
        if new is not None and self.store.path is not None and keys.same_file(key_file or "", self.store.path):
            raise UsageError(f"{keys.RESEAL_KEY_FLAG} {key_file!r} is the store itself; keep the key outside the store")
        return reseal(self.store, self.clock, new)

    def prune_candidates(self, run_id: str | None = None) -> list[_prune.PruneCandidate]:
        """What is safe to prune now in one run, or in every run.

        Args:
            run_id: One run; None: every run.

        Returns:
            The candidates, each with why it is safe.

        Raises:
            RunNotFound: No run `run_id`.
        """
        return self._pruner.candidates([run_id] if run_id else list(self.run_ids()))

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
        them, so nothing is removed on a judgement made before a change
        (`upkeep.pruning.Pruner`).

        Args:
            apply: Remove them (archiving first what has future value); False: only list.
            run_id: One run; None: every run.
            operator: Who prunes, for the audit; None: `$PHASEGATE_OPERATOR`, else the login name.
            reason: Why, for the audit.

        Returns:
            The candidates listed, or those removed.

        Raises:
            RunNotFound: No run `run_id`.
            PhasegateError: An archive could not be written or read back (the
                folder is not private to this user, a disk error): nothing of
                that run was pruned.
        """
        listed = self.prune_candidates(run_id)
        if not apply:
            return listed
        return self._pruner.apply(listed, operator=operator, reason=reason)
