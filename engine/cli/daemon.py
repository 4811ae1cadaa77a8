"""`phasegate worker`: carries out decisions and picks up dead runs.

It resumes runs that have an operator's decision waiting, runs that were
reset, and `running` runs whose holder died (a dead process on this host is
seen at once, one elsewhere when its lease expires), using each run's stored
target and inputs. Each resume is an ordinary `Engine.run`, so it takes the
run's lease and keeps it alive with a heartbeat while it works; a run another
live process holds is left alone.

SIGTERM or SIGINT asks it to stop: the current phase finishes and is
checkpointed, the run is left resumable with its lease released, and the
worker exits 0. A second signal stops it at once; the run is then simply
interrupted (its process is gone) and resumable like any other crash, because
every record is its own transaction and nothing is half-written.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any

from .._host import HOST
from ..authoring.loader import load
from ..engine import Engine
from ..errors import ConnectionLost, ExitCode, PhasegateError, RunHeld, StoreError
from ..observe import hooks, logs
from ..outcome import Outcome
from ..run.lease import HolderState, holder_name, holder_state
from ..run.stopping import StopRequest
from ..states import OutcomeStatus, RunStatus
from ..views.workers import DEFAULT_EVERY, Beacon
from .signals import two_signals

log = logging.getLogger("phasegate.worker")


#: Tries at opening the store when the server drops the connection meanwhile,
#: and the wait before the first retry (doubled each time, at most 5 s).
OPEN_TRIES = 8
OPEN_BACKOFF = 0.2


def open_patiently(open_engine: Callable[[], Engine], tries: int = OPEN_TRIES) -> Engine:
    """The worker's engine, opened again when the server drops the connection
    while it opens (a failover): each drop is one line, and only the last
    one is an error the worker exits with.

    Args:
        open_engine: Opens the engine on the worker's store.
        tries: How many times to try.

    Returns:
        The engine.

    Raises:
        ConnectionLost: The connection dropped on every try.
        StoreError: Any other reason the store cannot be opened, at once.
    """
    wait = OPEN_BACKOFF
    for attempt in range(1, tries + 1):
        try:
            return open_engine()
        except ConnectionLost as exc:
            if attempt == tries:
                raise
            log.error("cannot open the store (try %d of %d): %s; trying again in %.1fs", attempt, tries, exc, wait)
            time.sleep(wait)
            wait = min(wait * 2, 5.0)
    raise AssertionError("unreachable")  # the loop returns or raises


class Worker:
    """Polls one store and resumes what is waiting, `jobs` runs at a time."""

    def __init__(self, engine: Engine, *, poll: float = 1.0, jobs: int = 1, heartbeat: float = DEFAULT_EVERY) -> None:
        self.engine = engine
        self.poll = poll
        self.heartbeat = heartbeat
        """Seconds between this worker's heartbeats in the store (workers.py)."""
        self._busy: set[str] = set()
        self.jobs = max(1, int(jobs))
        """How many runs to resume at once; more than one lets a decision be
        carried out while a long run is being resumed."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._halt = StopRequest()
        """Given to every run it resumes: a signal stops each at its next step."""
        #: run id -> the run's `updated_at` after this worker last handled it,
        #: and its last decision before. A run is not picked up again until
        #: something changes it (a new decision, a reset, another process), so
        #: a run that stays blocked is not re-run in a tight loop. The last
        #: decision as the run was taken up: one recorded while it ran (an
        #: answer to its other question) leaves `updated_at` to the run's end.
        #: And when: a parked run is looked at again once its wake time comes,
        #: if that was after (a due run it could not resume is not retried at every look).
        self._handled: dict[str, tuple[Any, Any, float]] = {}
        self._warned: set[str | tuple[str, str]] = set()
        self.handled = 0
        """Runs resumed since the worker started (for tests and the final log line)."""

    def stop(self, *_: Any) -> None:
        """Ask the worker to stop: each run it is resuming stops at its next step."""
        self._halt.request("stopped by a worker shutdown")
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- signals ----------------------------------------------------------------

    def _first_signal(self, name: str) -> None:
        self._halt.request(f"stopped by {name}")
        self._stop.set()
        log.warning("%s: stopping each run at its next step, then stopping (send it again to stop at once)", name)

    @staticmethod
    def _second_signal(name: str) -> None:
        log.warning("%s again: stopping now; the current run is left interrupted and resumable", name)

    # -- finding work -----------------------------------------------------------

    def waiting(self) -> list[Any]:
        """Runs to resume now: decisions and resets first, then dead runs,
        each oldest change first."""
        now = self.engine.clock()
        with self.engine.store.read() as conn:
            rows = self.engine.store.runs.waiting(conn, now, host=HOST)
        hooks.OBSERVER.workflows(sorted({r.workflow for r in rows}))
        out = []
        for r in rows:
            held = holder_state(r, now) if r.status == RunStatus.RUNNING.value else HolderState.NONE
            if held is HolderState.LIVE:
                continue  # someone is working on it
            if held is HolderState.STALLED:
                # Alive on this host past its lease: only an operator takes it
                # over (resume --force); a worker never forces.
                if ("stalled", r.run_id) not in self._warned:
                    self._warned.add(("stalled", r.run_id))
                    log.warning("run %s: its holder %s is stalled; leaving it", r.run_id, holder_name(r))
                continue
            due = r.status == RunStatus.WAITING.value and r.wake_at is not None and r.wake_at <= now
            seen = self._handled.get(r.run_id)
            woke = due and (seen is None or r.wake_at > seen[2])
            if seen is not None and seen[:2] == (r.updated_at, r.decisions_last) and not woke:
                continue  # nothing changed since this worker last ran it (a parked run's time may have come)
            if not r.target:
                if r.run_id not in self._warned:
                    self._warned.add(r.run_id)
                    log.warning("run %s has no stored target (it was started from code); resume it from code", r.run_id)
                continue
            out.append(r)
        # An operator who just decided is waiting to see the run move; a dead
        # run's resume can wait for them (the sort is stable: oldest first).
        out.sort(key=lambda r: r.status == RunStatus.RUNNING.value)
        return out

    @staticmethod
    def _why(eng: Engine, row: Any) -> str:
        if row.status == RunStatus.RESET.value:
            return "reset: starting over from its original inputs"
        if row.status == RunStatus.WAITING.value and row.wake_at is not None and row.wake_at <= eng.clock():
            return f"due: {row.attention}" if row.attention else "due"
        with eng.store.read() as conn:
            pending = [d for d in eng.store.decisions.of_run(conn, row.run_id) if d.state == "pending"]
        if pending:
            return "decision waiting: " + ", ".join(f"{d.action} by {d.operator} (#{d.id})" for d in pending)
        if row.lease_owner:
            return f"interrupted: its holder {holder_name(row)} is gone"
        return f"interrupted: {row.attention}" if row.attention else "interrupted: stopped"

    # -- doing it ---------------------------------------------------------------

    def handle(self, row: Any, engine: Engine | None = None) -> Outcome | None:
        """Resume one run with its stored target and inputs (on `engine`, a
        thread's own, or the worker's)."""
        eng = engine or self.engine
        if self._moved(eng, row):
            return None
        with self._lock:
            self._busy.add(row.run_id)
        try:
            with logs.bound(run_id=row.run_id, workflow=row.workflow):
                return self._handle(row, eng)
        finally:
            with self._lock:
                self._busy.discard(row.run_id)

    def _doing(self) -> tuple[list[str], int]:
        """What the heartbeat records: the runs being resumed, and how many were."""
        with self._lock:
            return sorted(self._busy), self.handled

    def _handle(self, row: Any, eng: Engine) -> Outcome | None:
        try:
            why = self._why(eng, row)
        except StoreError as exc:
            # The connection dropped before the resume began: nothing was
            # done, the run is still waiting and is listed at the next look.
            log.error("run %s: %s: %s; it will be looked at again", row.run_id, exc.title, exc)
            return None
        log.info("run %s: resuming (%s)", row.run_id, why)
        outcome: Outcome | None = None
        retry = False
        try:
            # Loaded afresh and in isolation: this run's own modules, as its files are now.
            wf = load(row.target, isolated=True)
            eng.stop_request = self._halt
            outcome = eng.run(wf, row.run_id, target=row.target)
        except RunHeld as exc:
            log.info("run %s: %s; leaving it", row.run_id, exc)
            return None
        except StoreError as exc:
            # The store failed under the run (a dropped connection, a locked
            # file): the run stopped interrupted; look at it again next time.
            log.error("run %s: %s: %s; it will be resumed again", row.run_id, exc.title, exc)
            retry = True
        except PhasegateError as exc:
            log.error("run %s: %s: %s", row.run_id, exc.title, exc)
        except Exception:  # noqa: BLE001 - one bad run (or workflow import) must not stop the worker
            log.exception("run %s: the worker failed to resume it", row.run_id)
        finally:
            eng.stop_request = None
        if outcome is not None:
            self._log_outcome(outcome)
        try:
            with eng.store.read() as conn:
                after = eng.store.runs.get(conn, row.run_id)
        except PhasegateError as exc:
            log.error("run %s: cannot read it back: %s", row.run_id, exc)
            after = None
        with self._lock:
            self.handled += 1
            if after is not None and not retry:
                self._handled[row.run_id] = (after.updated_at, row.decisions_last, eng.clock())
        return outcome

    @staticmethod
    def _moved(eng: Engine, row: Any) -> bool:
        """Whether the run changed since the list it came from was read:
        another worker took it (or finished it) meanwhile. Several workers
        walk the same list, and a resume costs a workflow load, a lease and
        the start sequence, even to find a run held or already completed;
        one indexed read saves that. A run that is still waiting is listed
        again at the next look."""
        try:
            with eng.store.read() as conn:
                now = eng.store.runs.get(conn, row.run_id)
        except PhasegateError:
            return False  # let the resume say what is wrong
        return now is None or now.updated_at != row.updated_at

    def _handle_in_thread(self, row: Any) -> Outcome | None:
        # Each thread gets its own engine (its own connections and its own
        # `should_stop`), so concurrent runs share nothing but the store file.
        e = self.engine
        try:
            eng = Engine(
                e.store.target,
                clock=e.clock,
                lease_seconds=e.lease_seconds,
                retention_days=e.retention_days,
                archive_dir=str(e.archive_dir),
                create=False,
                effect_flush=e.effect_flush,
                park_seconds=e.park_seconds,
            )
        except PhasegateError as exc:
            log.error("run %s: cannot open the store: %s", row.run_id, exc)
            return None
        try:
            return self.handle(row, eng)
        except PhasegateError as exc:
            log.error("run %s: %s: %s; it will be looked at again", row.run_id, exc.title, exc)
            return None
        except Exception:  # noqa: BLE001 - a thread's failure would otherwise vanish into its future
            log.exception("run %s: the worker failed to resume it", row.run_id)
            return None
        finally:
            eng.close()

    @staticmethod
    def _log_outcome(o: Outcome) -> None:
        ran = f" (ran {', '.join(o.phases_run)})" if o.phases_run else ""
        if o.status is OutcomeStatus.COMPLETED:
            log.info("run %s: completed%s", o.run_id, ran)
        elif o.status is OutcomeStatus.BLOCKED:
            log.warning("run %s: blocked for an operator%s: %s", o.run_id, ran, "; ".join(str(r) for r in o.blocked))
        elif o.status is OutcomeStatus.INTERRUPTED:
            log.info("run %s: interrupted: %s; resumable (worker stopping)%s", o.run_id, o.stopped, ran)
        elif o.status in (OutcomeStatus.WAITING, OutcomeStatus.PAUSED, OutcomeStatus.CANCELLED):
            log.info("run %s: %s: %s%s", o.run_id, o.status.value, o.stopped, ran)
        else:
            err = o.error or {}
            log.error(
                "run %s: failed in phase %s: %s: %s", o.run_id, err.get("phase"), err.get("type"), err.get("message")
            )

    def serve(self, *, once: bool = False) -> int:
        """Handle what is waiting until stopped (or, with `once`, one pass)."""
        with two_signals(self._first_signal, self._second_signal):
            self._know_workflows()
            beacon = Beacon(
                self.engine.store, jobs=self.jobs, every=self.heartbeat, clock=self.engine.clock, doing=self._doing
            )
            beacon.start()
            log.info(
                "watching %s%s%s",
                getattr(self.engine.store, "where", self.engine.store.path),
                " (one pass)" if once else f" every {self.poll:g}s",
                f", up to {self.jobs} runs at once" if self.jobs > 1 else "",
            )
            try:
                if self.jobs == 1:
                    self._serve_serial(once)
                else:
                    self._serve_concurrent(once)
            except KeyboardInterrupt:
                log.warning("stopped at once")
                return ExitCode.INTERRUPTED
            finally:
                beacon.stop()
        log.info("stopped after resuming %d run(s)", self.handled)
        return 0

    def _know_workflows(self) -> None:
        """Every workflow the store knows, and their phases, told to the
        observers once at the start: their counters' series exist at 0
        before any event."""
        try:
            with self.engine.store.read() as conn:
                names = self.engine.store.runs.workflows(conn)
                phases = self.engine.store.runs.phases_by_workflow(conn)
        except PhasegateError as exc:
            log.error("cannot read the store's workflows: %s", exc)
            return
        hooks.OBSERVER.workflows(names)
        for wf, of_wf in phases.items():
            hooks.OBSERVER.workflow_phases(wf, of_wf)

    def _look(self) -> list[Any]:
        try:
            return self.waiting()
        except PhasegateError as exc:  # a locked or vanished store: say so, look again later
            log.error("cannot read the store: %s", exc)
            return []

    def _serve_serial(self, once: bool) -> None:
        while not self._stop.is_set():
            for row in self._look():
                if self._stop.is_set():
                    break
                try:
                    self.handle(row)
                except PhasegateError as exc:
                    # A store that fails between two reads (a dropped
                    # connection) costs this run one look, not the worker.
                    log.error("run %s: %s: %s; it will be looked at again", row.run_id, exc.title, exc)
            if once:
                break
            self._stop.wait(self.poll)

    def _serve_concurrent(self, once: bool) -> None:
        inflight: dict[str, Future[Outcome | None]] = {}
        queue = self._look() if once else []
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="phasegate-worker")
        try:
            while not self._stop.is_set():
                for rid in [r for r, f in inflight.items() if f.done()]:
                    del inflight[rid]
                if not once:
                    queue = [r for r in self._look() if r.run_id not in inflight]
                while queue and len(inflight) < self.jobs and not self._stop.is_set():
                    row = queue.pop(0)
                    inflight[row.run_id] = pool.submit(self._handle_in_thread, row)
                if once and not queue and not inflight:
                    break
                self._stop.wait(0.05 if once else self.poll)
            # Stopping: each run in flight finishes its current phase and stops.
            while inflight:
                wait_futures(list(inflight.values()), timeout=0.2)
                inflight = {r: f for r, f in inflight.items() if not f.done()}
        except KeyboardInterrupt:
            # A second signal. Threads cannot be interrupted, and every record
            # is its own transaction, so leaving now half-writes nothing: the
            # runs in flight are simply interrupted, resumable like any crash.
            log.warning("stopped at once")
            logging.shutdown()
            os._exit(ExitCode.INTERRUPTED)
        pool.shutdown(wait=True)
