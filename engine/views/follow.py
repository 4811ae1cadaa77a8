"""`phasegate follow RUN` and `Engine.follow`: a run's records as they commit.

A `Follower` keeps one cursor per table of the run's own rows (the last id
read of its steps, effect records, checkpoints and decisions) and the run
row's last-seen status and progress; each `read` turns what was committed
since into typed events, oldest first. Nothing is read twice and no other
run's rows are read (store/_runfeed.py pages by the run's id).

`follow` is the async iterator around it: a read at each change the store's
feed notices (views/feed.py: file events and `data_version` on SQLite,
LISTEN/NOTIFY on PostgreSQL) and at least every `poll` seconds anyway, for
what changes without a commit (a process that dies leaves its run
interrupted without writing anything). It ends after the run ends
(completed, failed or cancelled): the run's last transaction is its end, so
every record before it has been read by then.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .. import _json
from ..errors import RunNotFound
from ..safetext import safe
from ..states import RunStatus
from ..store._runfeed import PAGE
from ..store.store import Store
from ..timefmt import iso
from .feed import Probe, watch_store
from .progress import ProgressView
from .status import effective_status

FollowKind = Literal["status", "step", "effect", "phase", "progress", "decision"]
"""What a follow event is about."""

#: The statuses a run does not leave by itself: `follow` ends at them.
ENDED = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


@dataclass(frozen=True)
class StatusEvent:
    """The run's status changed (a wait, a stop, a start, its end)."""

    kind: ClassVar[FollowKind] = "status"
    """What the event is about: `status`."""
    at: float
    """When it was seen to change (the row's `updated_at`, or the clock's when
    only liveness changed: a dead process writes nothing)."""
    status: RunStatus
    """Its effective status now (`interrupted` and `stalled` included)."""
    attention: str
    """The line the runs list says for it (stored text)."""
    waiting: str | None = None
    """For a waiting run, what it waits for (answer, timer, retry_later, ...)."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {
            "kind": self.kind,
            "at": iso(self.at),
            "status": self.status.value,
            "attention": self.attention,
            "waiting": self.waiting,
        }

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        wait = f" for {safe(self.waiting)}" if self.waiting else ""
        return f"{self.status.value}{wait}" + (f" - {safe(self.attention)}" if self.attention else "")


@dataclass(frozen=True)
class StepEvent:
    """A durable step's result was saved."""

    kind: ClassVar[FollowKind] = "step"
    """What the event is about: `step`."""
    at: float
    """When it was saved."""
    phase: str
    """Its phase."""
    key: str
    """Its key (the step's name)."""
    id: int
    """Its row's id: the order steps were saved in."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {"kind": self.kind, "at": iso(self.at), "phase": self.phase, "key": self.key, "id": self.id}

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        return f"{safe(self.phase)} {safe(self.key)}"


@dataclass(frozen=True)
class EffectEvent:
    """An effect's intent was recorded, or its completion."""

    kind: ClassVar[FollowKind] = "effect"
    """What the event is about: `effect`."""
    at: float
    """When (the intent's time, or the completion's)."""
    phase: str
    """Its phase."""
    name: str
    """The effect's name."""
    key: str
    """Its idempotency key."""
    state: str
    """intent or done."""
    attempt: int
    """Which attempt (a retried intent counts up)."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {
            "kind": self.kind,
            "at": iso(self.at),
            "phase": self.phase,
            "name": self.name,
            "key": self.key,
            "state": self.state,
            "attempt": self.attempt,
        }

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        return f"{safe(self.phase)} {safe(self.name)} {safe(self.state)} ({safe(self.key)})"


@dataclass(frozen=True)
class PhaseEvent:
    """An entry of the run's chain: a phase checkpointed (kind `phase`), or a rewind, env or degrade entry."""

    kind: ClassVar[FollowKind] = "phase"
    """What the event is about: `phase`."""
    at: float
    """When it was written."""
    phase: str | None
    """The phase it is about."""
    entry: str
    """The entry's kind: phase, rewind, env or degrade."""
    epoch: int
    """The run's epoch (a reset starts a new one)."""
    seq: int
    """Its place in the chain."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {
            "kind": self.kind,
            "at": iso(self.at),
            "phase": self.phase,
            "entry": self.entry,
            "epoch": self.epoch,
            "seq": self.seq,
        }

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        what = "done" if self.entry == "phase" else safe(self.entry)
        return f"{safe(self.phase)} {what} (checkpoint {self.epoch}.{self.seq})"


@dataclass(frozen=True)
class ProgressEvent:
    """The running phase's progress as last written (`ctx.progress`)."""

    kind: ClassVar[FollowKind] = "progress"
    """What the event is about: `progress`."""
    at: float
    """When it was reported."""
    progress: ProgressView
    """The report."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {"kind": self.kind, **self.progress.to_json()}

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        pace = self.progress.pace()
        return self.progress.said() + (f"  ({pace})" if pace else "")


@dataclass(frozen=True)
class DecisionEvent:
    """An operator's decision was recorded, or applied, voided or expired."""

    kind: ClassVar[FollowKind] = "decision"
    """What the event is about: `decision`."""
    at: float
    """When it was recorded, or applied."""
    id: int
    """The decision's id."""
    action: str
    """What was decided."""
    phase: str | None
    """The phase it is about, if any."""
    operator: str
    """Who decided (as they named themselves)."""
    reason: str
    """Why (stored text)."""
    state: str
    """pending, applied, void, ..."""

    def to_json(self) -> dict[str, Any]:
        """The event as a `follow --json` line holds it.

        Returns:
            `kind`, `at` (ISO 8601) and the event's fields, stored text as stored.
        """
        return {
            "kind": self.kind,
            "at": iso(self.at),
            "id": self.id,
            "action": self.action,
            "phase": self.phase,
            "operator": self.operator,
            "reason": self.reason,
            "state": self.state,
        }

    def said(self) -> str:
        """The event's words, as `phasegate follow` prints them.

        Returns:
            One line, stored text escaped.
        """
        on = f" {safe(self.phase)}" if self.phase else ""
        return f"#{self.id} {safe(self.action)}{on} {safe(self.state)} by {safe(self.operator)}: {safe(self.reason)}"


FollowEvent = StatusEvent | StepEvent | EffectEvent | PhaseEvent | ProgressEvent | DecisionEvent
"""One thing `follow` reports."""


class Follower:
    """One run's cursors: what was read of it so far (one thread at a time)."""

    def __init__(self, store: Store, run_id: str, clock: Callable[[], float], since: float | None = None) -> None:
        self._store = store
        self.run_id = run_id
        self._clock = clock
        self._since = since
        self._after = {"steps": 0, "effects": 0, "checkpoints": 0, "decisions": 0}
        self._open_effects: dict[int, str] = {}
        """Effect records read as intents, by id: read again until done."""
        self._open_decisions: dict[int, str] = {}
        """Decisions read as pending, by id: read again until settled."""
        self._seen: tuple[RunStatus, str | None] | None = None
        self._progress_at: float | None = None
        self.ended = False
        """Whether the run was read as ended (`ENDED`)."""

    def read(self) -> list[FollowEvent]:
        """What was committed since the last read, oldest first; the run's
        status and progress last, as they are now.

        Returns:
            The events (none when nothing changed).

        Raises:
            RunNotFound: the run is not (or no longer) in the store.
            StoreError: the store could not be read.
        """
        events: list[FollowEvent] = []
        with self._store.read() as conn:
            # The run row first: a run read as ended has committed every record
            # it will write, so the pages read after it hold them all.
            run = self._store.runs.get(conn, self.run_id)
            if run is None:
                raise RunNotFound(f"no run {self.run_id!r} in {self._store.where}")
            while True:
                full = self._page(conn, events)
                if not full:
                    break
        events.sort(key=_order)
        if self._since is not None:
            events = [e for e in events if e.at >= self._since]
        events += self._run_row(run)
        return events

    def _page(self, conn: Any, events: list[FollowEvent]) -> bool:
        """One page of each table into `events`; True when a page was full (read on)."""
        feed, rid, after = self._store.feed, self.run_id, self._after
        full = False
        rows = feed.steps_after(conn, rid, after["steps"])
        for r in rows:
            events.append(StepEvent(at=float(r.created_at), phase=str(r.phase), key=str(r.step_key), id=int(r.id)))
            after["steps"] = int(r.id)
        full |= len(rows) >= _page_size()
        again = feed.effects_by_id(conn, rid, list(self._open_effects))
        rows = feed.effects_after(conn, rid, after["effects"])
        for r in rows:
            after["effects"] = int(r.id)
            events.append(_effect(r, "intent"))
            self._open_effects[int(r.id)] = "intent"
        full |= len(rows) >= _page_size()
        for r in [*again, *rows]:
            if str(r.state) != self._open_effects.get(int(r.id)):
                events.append(_effect(r, str(r.state)))
            if str(r.state) == "done":
                self._open_effects.pop(int(r.id), None)
            else:
                self._open_effects[int(r.id)] = str(r.state)
        rows = feed.checkpoints_after(conn, rid, after["checkpoints"])
        for r in rows:
            after["checkpoints"] = int(r.id)
            events.append(
                PhaseEvent(
                    at=float(r.created_at),
                    phase=r.phase,
                    entry=str(r.kind),
                    epoch=int(r.epoch),
                    seq=int(r.seq),
                )
            )
        full |= len(rows) >= _page_size()
        again = feed.decisions_by_id(conn, rid, list(self._open_decisions))
        rows = feed.decisions_after(conn, rid, after["decisions"])
        for r in [*again, *rows]:
            new = int(r.id) > after["decisions"]
            state = str(r.state)
            if new or state != self._open_decisions.get(int(r.id)):
                at = float(r.applied_at) if (not new and r.applied_at is not None) else float(r.at)
                events.append(
                    DecisionEvent(
                        at=at,
                        id=int(r.id),
                        action=str(r.action),
                        phase=r.phase,
                        operator=str(r.operator),
                        reason=str(r.reason),
                        state=state,
                    )
                )
            if state == "pending" or state == "proposed":
                self._open_decisions[int(r.id)] = state
            else:
                self._open_decisions.pop(int(r.id), None)
        if rows:
            after["decisions"] = max(after["decisions"], max(int(r.id) for r in rows))
        full |= len(rows) >= _page_size()
        return full

    def _run_row(self, run: Any) -> list[FollowEvent]:
        out: list[FollowEvent] = []
        now = self._clock()
        prog = ProgressView.from_row(run)
        if prog is not None and prog.at != self._progress_at:
            self._progress_at = prog.at
            if self._since is None or prog.at >= self._since:
                out.append(ProgressEvent(at=prog.at, progress=prog))
        elif prog is None:
            self._progress_at = None
        status = effective_status(run, now)
        waiting = None
        if status is RunStatus.WAITING:
            w = _json.loads(getattr(run, "waiting_json", None) or "{}")
            waiting = str(w.get("kind")) if isinstance(w, dict) and w.get("kind") else None
        seen = (status, waiting)
        if seen != self._seen:
            self._seen = seen
            stored = RunStatus(run.status)
            at = float(run.updated_at) if status is stored else now
            out.append(StatusEvent(at=at, status=status, attention=str(run.attention or ""), waiting=waiting))
        self.ended = status in ENDED
        return out


def _effect(r: Any, state: str) -> EffectEvent:
    at = r.done_at if state == "done" and r.done_at is not None else r.intent_at
    return EffectEvent(
        at=float(at),
        phase=str(r.phase),
        name=str(r.name),
        key=str(r.key),
        state=state,
        attempt=int(r.attempt),
    )


_RANK = {"decision": 0, "step": 1, "effect": 2, "phase": 3, "progress": 4, "status": 5}


def _order(e: FollowEvent) -> tuple[float, int, int]:
    return (e.at, _RANK[e.kind], getattr(e, "id", 0))


def _page_size() -> int:
    return PAGE


async def follow(
    store: Store,
    run_id: str,
    clock: Callable[[], float],
    make_probe: Callable[[], Probe],
    *,
    since: float | None = None,
    poll: float = 1.0,
) -> AsyncIterator[FollowEvent]:
    """A run's events as they commit, until it ends (`Engine.follow`).

    Args:
        store: The store (read in a worker thread, never on the event loop).
        run_id: The run.
        clock: The engine's clock (UNIX seconds).
        make_probe: Makes the change probe the feed's thread uses (`Engine.data_version`).
        since: Only events at or after this time (UNIX seconds); None: from the run's start.
        poll: Seconds between reads when no change is noticed.

    Yields:
        Each event once, oldest first; the last is the run's end.

    Raises:
        RunNotFound: the run is not in the store (at the first read).
        StoreError: the store could not be read.
    """
    follower = Follower(store, run_id, clock, since)
    loop = asyncio.get_running_loop()
    woken = asyncio.Event()
    stop = threading.Event()

    def changed(_source: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed first: nothing to wake
            loop.call_soon_threadsafe(woken.set)

    feed = threading.Thread(
        target=watch_store,
        args=(store.path, make_probe, changed, stop),
        kwargs={"poll": poll, "debounce_ms": 50},
        name=f"phasegate-follow-{run_id}",
        daemon=True,
    )
    started = False
    try:
        while True:
            woken.clear()
            for event in await asyncio.to_thread(follower.read):
                yield event
            if follower.ended:
                return
            if not started:
                feed.start()  # after the first read: a missing run starts no thread
                started = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), timeout=poll)
    finally:
        stop.set()
        if started:
            await asyncio.to_thread(feed.join, 5)
