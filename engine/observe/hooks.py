"""The engine's side of observation: the `Observer` interface, whose
methods do nothing, and `OBSERVER`, the one object the engine calls.

Installing an observer (`install`) replaces `OBSERVER`; several at once are
called in turn (`Fanout`). The engine never imports an observer's library:
metrics.py and tracing.py do, and only when a process asks for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class Observer:
    """Called by the engine when something happens; every method does nothing here.

    Subclasses override what they count. Every method is called on the
    run's own threads, so an override must be quick and must not raise.
    """

    def attempt(self, run_id: str, workflow: str, call: Callable[[], T]) -> T:
        """One execution of a run (a start or a resume), from its lease to its end.

        Args:
            run_id: The run.
            workflow: The run's workflow's name.
            call: Executes the run; called exactly once.

        Returns:
            What `call` returned.
        """
        return call()

    def capture(self, run_id: str) -> Callable[[], None] | None:
        """Called in the caller's thread before a run is handed to a thread
        of its own: what is returned is called in that thread first (a
        tracer carries the caller's span over with it).

        Args:
            run_id: The run.

        Returns:
            A function to call in the run's thread, or None.
        """
        return None

    def acquired(self, run_id: str, row: Any, owner: str, record: Callable[[str], None]) -> None:
        """The run's lease was taken.

        Args:
            run_id: The run.
            row: The run's row as it was before: its `lease_owner` is who held
                the lease (this execution's `owner` for a new run), its
                `trace_id` the trace of the attempt before.
            owner: This execution's lease owner.
            record: Stores a trace id with the run (the run row's `trace_id`).
        """

    def phase(self, run_id: str, workflow: str, phase: str, call: Callable[[], T]) -> T:
        """One phase's call, its retries included.

        Args:
            run_id: The run.
            workflow: Its workflow.
            phase: The phase.
            call: Calls the phase; returns an `Outcome` when the phase failed.

        Returns:
            What `call` returned.
        """
        return call()

    def checkpoint(self, run_id: str, workflow: str, phase: str, began: float) -> None:
        """A phase's checkpoint committed.

        Args:
            run_id: The run.
            workflow: Its workflow.
            phase: The phase checkpointed.
            began: `time.monotonic()` just before its transaction began.
        """

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        """A durable step was computed and saved.

        Args:
            run_id: The run.
            phase: Its phase.
            key: The step's key.
            began: `time.time()` when the step was found not saved (its computation began).
        """

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        """An effect ended: performed (`done`), found in doubt (`in_doubt`), or
        settled by its reconcile hook (`reconciled_done`, `reconciled_not_done`,
        `reconciled_unknown`).

        Args:
            run_id: The run.
            phase: Its phase.
            key: The effect's key.
            outcome: As above.
            began: `time.time()` when its intent was recorded (or the question began).
        """

    def step_failed(self, run_id: str, phase: str, key: str, began: float, error: BaseException) -> None:
        """A durable step's function raised (after its retries): the phase fails with it.

        Args:
            run_id: The run.
            phase: Its phase.
            key: The step's key.
            began: `time.time()` when the step was found not saved.
            error: What it raised.
        """

    def effect_call(self, run_id: str, phase: str, key: str, call: Callable[[], T]) -> T:
        """An effect's function being called (its intent is durable already):
        a tracer makes the effect's span current around it, so that an
        instrumented HTTP client's request carries that span. `effect` is
        called after it, when the effect ended.

        Args:
            run_id: The run.
            phase: Its phase.
            key: The effect's key.
            call: Calls the effect's function; called exactly once.

        Returns:
            What `call` returned.
        """
        return call()

    def heartbeat(self) -> None:
        """A run's lease was extended by its heartbeat."""

    def workflows(self, names: list[str]) -> None:
        """Workflows this process may run (the store's, at a worker's start and
        at each look): a counter creates their series at 0 ahead of their first event.

        Args:
            names: Workflow names, as the store has them.
        """

    def workflow_phases(self, workflow: str, names: Sequence[str]) -> None:
        """A workflow's phases (from its runs' shapes in the store at a
        worker's start, and from its code at each attempt): a per-phase
        counter creates their series at 0 ahead of their first event.

        Args:
            workflow: The workflow's name.
            names: Its phases' names.
        """

    def alert(self, ok: bool) -> None:
        """A watch finished delivering one alert.

        Args:
            ok: Every hook took it.
        """


class Fanout(Observer):
    """Several observers, each called in turn (metrics and tracing together)."""

    def __init__(self, observers: list[Observer]) -> None:
        self.observers = observers

    def attempt(self, run_id: str, workflow: str, call: Callable[[], T]) -> T:
        wrapped = call
        for o in reversed(self.observers):
            wrapped = _bind_attempt(o, run_id, workflow, wrapped)
        return wrapped()

    def capture(self, run_id: str) -> Callable[[], None] | None:
        got = [f for f in (o.capture(run_id) for o in self.observers) if f is not None]
        if not got:
            return None

        def enter() -> None:
            for f in got:
                f()

        return enter

    def acquired(self, run_id: str, row: Any, owner: str, record: Callable[[str], None]) -> None:
        for o in self.observers:
            o.acquired(run_id, row, owner, record)

    def phase(self, run_id: str, workflow: str, phase: str, call: Callable[[], T]) -> T:
        wrapped = call
        for o in reversed(self.observers):
            wrapped = _bind_phase(o, run_id, workflow, phase, wrapped)
        return wrapped()

    def checkpoint(self, run_id: str, workflow: str, phase: str, began: float) -> None:
        for o in self.observers:
            o.checkpoint(run_id, workflow, phase, began)

    def step(self, run_id: str, phase: str, key: str, began: float) -> None:
        for o in self.observers:
            o.step(run_id, phase, key, began)

    def effect(self, run_id: str, phase: str, key: str, outcome: str, began: float) -> None:
        for o in self.observers:
            o.effect(run_id, phase, key, outcome, began)

    def step_failed(self, run_id: str, phase: str, key: str, began: float, error: BaseException) -> None:
        for o in self.observers:
            o.step_failed(run_id, phase, key, began, error)

    def effect_call(self, run_id: str, phase: str, key: str, call: Callable[[], T]) -> T:
        wrapped = call
        for o in reversed(self.observers):
            wrapped = _bind_effect(o, run_id, phase, key, wrapped)
        return wrapped()

    def heartbeat(self) -> None:
        for o in self.observers:
            o.heartbeat()

    def workflows(self, names: list[str]) -> None:
        for o in self.observers:
            o.workflows(names)

    def workflow_phases(self, workflow: str, names: Sequence[str]) -> None:
        for o in self.observers:
            o.workflow_phases(workflow, names)

    def alert(self, ok: bool) -> None:
        for o in self.observers:
            o.alert(ok)


def _bind_attempt(o: Observer, run_id: str, workflow: str, call: Callable[[], T]) -> Callable[[], T]:
    return lambda: o.attempt(run_id, workflow, call)


def _bind_effect(o: Observer, run_id: str, phase: str, key: str, call: Callable[[], T]) -> Callable[[], T]:
    return lambda: o.effect_call(run_id, phase, key, call)


def _bind_phase(o: Observer, run_id: str, workflow: str, phase: str, call: Callable[[], T]) -> Callable[[], T]:
    return lambda: o.phase(run_id, workflow, phase, call)


OBSERVER: Observer = Observer()
"""What the engine calls. Read at each call (`hooks.OBSERVER.x(...)`), so an
observer installed after a module was imported is seen."""

_installed: list[Observer] = []
_lock = threading.Lock()


def install(observer: Observer) -> None:
    """Have the engine call `observer` too, from now on, in this process.

    Args:
        observer: A metrics or tracing observer (or one of an application's own).
    """
    global OBSERVER
    with _lock:
        if observer not in _installed:
            _installed.append(observer)
        OBSERVER = _installed[0] if len(_installed) == 1 else Fanout(list(_installed))


def uninstall(observer: Observer) -> None:
    """Stop calling `observer`; with none left, the engine calls nothing again.

    Args:
        observer: One that `install` was given.
    """
    global OBSERVER
    with _lock:
        if observer in _installed:
            _installed.remove(observer)
        if not _installed:
            OBSERVER = Observer()
        else:
            OBSERVER = _installed[0] if len(_installed) == 1 else Fanout(list(_installed))


def installed() -> list[Observer]:
    """The observers installed in this process, in order.

    Returns:
        A copy of the list.
    """
    with _lock:
        return list(_installed)


__all__ = ["OBSERVER", "Fanout", "Observer", "install", "installed", "uninstall"]
