"""Where an operator's hold on a run is applied: a pause, an unpause, a cancel.

A hold is a decision (`phasegate pause`, `unpause`, `cancel`) and is recorded
like any other (decide/recording.py). What it does to the run is here:

- on a stopped run (interrupted, waiting, blocked, failed, reset) it takes
  effect at once, in the recording transaction (`apply_now`): the run becomes
  `paused` (what it was is kept in `held_json["from"]`, so `unpause` puts it
  back, a due timer included) or `cancelled`;
- on a running run it is *asked* (`held_json["state"] == "asked"`): the
  run's process polls for it (`HoldWatch`) and stops at its next step, effect
  or phase boundary, keeping everything it saved (run/stopping.py); the run's
  end then records the hold instead of the status it would have had
  (`at_end`, in the runner's last transaction). A run that completes before
  the hold reaches it completes, and the hold is void.

The run row's `held_json` is untrusted like every stored value: `read` checks
its shape, and one that does not parse is no hold.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from .. import _json
from ..errors import RunCancelled, RunPaused
from ..states import Action, RunStatus
from ..store.store import LEASE_CLEARED, RunChange, Store
from . import mailbox
from .stopping import StopRequest

log = logging.getLogger("phasegate.run")

ASKED, IN_FORCE = "asked", "in_force"

#: How often a running run looks for a hold: a phase that calls a step every
#: 100 ms stops within a second of a pause (bench: "pause reaches a live run").
POLL_SECONDS = 0.2

#: The statuses a pause takes effect on (at once, or at the run's end), which an unpause restores.
_RESTORED = frozenset(
    s.value for s in (RunStatus.RUNNING, RunStatus.WAITING, RunStatus.BLOCKED, RunStatus.FAILED, RunStatus.RESET)
)

#: The columns a pause sets aside and an unpause restores.
_KEPT = ("status", "wake_at", "waiting_json", "attention")


@dataclass(frozen=True)
class Hold:
    """A hold as the run row records it."""

    action: Action
    """pause or cancel."""
    state: str
    """"asked" (of a running run, not yet met) or "in_force"."""
    by: str
    """Who decided it."""
    reason: str
    """Why, in their words."""
    at: float
    """When it was decided."""
    decision: int | None
    """The decision's id."""
    was: dict[str, Any] | None
    """For a pause in force: the run's status, wake time, wait and attention before it."""

    def as_dict(self) -> dict[str, Any]:
        """As `held_json` stores it."""
        return {
            "action": self.action.value,
            "state": self.state,
            "by": self.by,
            "reason": self.reason,
            "at": self.at,
            "decision": self.decision,
            "from": self.was,
        }

    def stop_why(self) -> str:
        """What a running run's stop says asked for it ("stopped for a pause by alice")."""
        return f"stopped for a {self.action.value} by {self.by}"

    def line(self) -> str:
        """The run's attention line while the hold is in force."""
        verb = "paused" if self.action is Action.PAUSE else "cancelled"
        return f"{verb} by {self.by}: {self.reason}"


def read(text: str | None) -> Hold | None:
    """The hold a `held_json` records, or None (none, or not one this engine wrote)."""
    if not text:
        return None
    try:
        d = _json.loads(text)
        act = Action(d["action"])
        if act not in (Action.PAUSE, Action.CANCEL) or d["state"] not in (ASKED, IN_FORCE):
            return None
        was = d.get("from")
        return Hold(
            act,
            str(d["state"]),
            str(d["by"]),
            str(d["reason"]),
            float(d["at"]),
            int(d["decision"]) if d.get("decision") is not None else None,
            was if isinstance(was, dict) else None,
        )
    except (KeyError, TypeError, ValueError, OverflowError):
        return None


def ask(store: Store, conn: Any, run_id: str, hold: Hold, now: float) -> None:
    """Ask a running run to stop for this hold at its next step (in the
    recording transaction). A hold asked before it and not yet met (a pause,
    then a cancel) is void: it is never met now."""
    before = read(store.runs.held(conn, run_id))
    if before is not None and before.state == ASKED:
        settle(store, conn, run_id, before, "void", now)
    store.runs.set_hold(conn, run_id, _json.dumps(hold.as_dict()), now)


def settle(store: Store, conn: Any, run_id: str, hold: Hold, state: str, now: float) -> None:
    """Settle the hold's decision `state` (applied or void): only when it is
    this run's own pending decision of the hold's action. The id comes from
    the run row's `held_json`, which is untrusted: an edited row must not
    settle another run's decision, or one already settled."""
    if hold.decision is None:
        return
    for d in store.decisions.of_run(conn, run_id):
        if int(d.id) == hold.decision and d.action == hold.action.value and d.state == "pending":
            store.decisions.settle(conn, hold.decision, state, now)


def _was(values: dict[str, Any]) -> dict[str, Any]:
    return {k: values.get(k) for k in _KEPT}


def in_force(hold: Hold, was: dict[str, Any], now: float) -> RunChange:
    """The run row's values once `hold` takes effect on a run that was `was`."""
    held = Hold(hold.action, IN_FORCE, hold.by, hold.reason, hold.at, hold.decision, was)
    status = RunStatus.PAUSED if hold.action is Action.PAUSE else RunStatus.CANCELLED
    where = str(was.get("attention") or "")
    line = held.line() + (f" ({where})" if where and hold.action is Action.PAUSE else "")
    return {
        **LEASE_CLEARED,
        "status": status.value,
        "held_json": _json.dumps(held.as_dict()),
        "wake_at": None,
        "waiting_json": None,
        "attention": line[:300],
        "updated_at": now,
    }


def apply_now(store: Store, conn: Any, run: Any, hold: Hold, now: float) -> None:
    """A pause or cancel of a stopped run, at once, in the recording transaction.

    The lease is revoked (a stalled holder's, the only one left): whatever
    it does when it wakes is fenced off. A cancel voids what else is pending."""
    was = {k: getattr(run, k, None) for k in _KEPT}
    store.runs.hold(conn, run.run_id, in_force(hold, was, now))
    if hold.action is Action.CANCEL:
        for d in store.decisions.of_run(conn, run.run_id):
            if d.state in ("pending", "proposed") and int(d.id) != hold.decision:
                store.decisions.settle(conn, int(d.id), "void", now)


def unpause(store: Store, conn: Any, run: Any, now: float) -> str:
    """Put a paused run back where it was, or withdraw a pause asked of a
    running run (its decision void). Returns the status it is back in."""
    hold = read(run.held_json)
    if hold is None and run.status != RunStatus.PAUSED.value:
        return str(run.status)
    if hold is not None and hold.state == ASKED:
        settle(store, conn, run.run_id, hold, "void", now)
        store.runs.set_hold(conn, run.run_id, None, now)
        return str(run.status)
    # Paused with no hold this engine can read: let go on as an interrupted run.
    was = (hold.was if hold is not None else None) or {}
    status = str(was.get("status") or RunStatus.RUNNING.value)
    waits = isinstance(was.get("waiting_json"), str)
    # Only what a pause sets aside (a stopped run's status; a waiting run's
    # wait with it): anything else is no status `held_json` may restore.
    if status not in _RESTORED or (status == RunStatus.WAITING.value and not waits):
        status = RunStatus.RUNNING.value  # no lease: an interrupted run, which a resume takes up
    waiting_json = was.get("waiting_json") if isinstance(was.get("waiting_json"), str) else None
    wake_at = was.get("wake_at") if isinstance(was.get("wake_at"), int | float) else None
    if status == RunStatus.WAITING.value and mailbox.queued_for(store, conn, run.run_id, waiting_json):
        wake_at = now  # a message it waits for was sent while it was paused: a worker takes it up now
    values: RunChange = {
        **LEASE_CLEARED,
        "status": status,
        "wake_at": wake_at,
        "waiting_json": waiting_json,
        "attention": str(was.get("attention") or "")[:300],
        "held_json": None,
        "updated_at": now,
    }
    store.runs.hold(conn, run.run_id, values)
    return status


def at_end(
    store: Store, conn: Any, run_id: str, hold: Hold, status: RunStatus, values: RunChange, now: float
) -> RunStatus:
    """A running run met an asked hold as it ended with `status` and
    `values`: what it records instead (in the runner's last transaction,
    `values` changed in place). A completed run completes; the hold is void."""
    if status is RunStatus.COMPLETED:
        settle(store, conn, run_id, hold, "void", now)
        values["held_json"] = None
        return status
    was = _was({**values, "status": status.value})
    values.update(in_force(hold, was, now))
    settle(store, conn, run_id, hold, "applied", now)
    if hold.action is Action.CANCEL:
        for d in store.decisions.of_run(conn, run_id):
            if d.state in ("pending", "proposed") and int(d.id) != hold.decision:
                store.decisions.settle(conn, int(d.id), "void", now)
    return RunStatus(values["status"])


class HoldWatch:
    """A running run's look, every `POLL_SECONDS`, for a hold an operator
    asked of it: once seen, the run's stop request is made, and the run stops
    at its next step (an async phase at its next await)."""

    def __init__(self, store: Store, run_id: str, stop: StopRequest, every: float = POLL_SECONDS) -> None:
        self._store = store
        self._run_id = run_id
        self._stop = stop
        self._every = every
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.seen: Hold | None = None
        """The hold that stopped the run, once seen."""

    def start(self) -> None:
        """Begin looking (a daemon thread)."""
        self._thread = threading.Thread(target=self._loop, name=f"phasegate-hold-{self._run_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop looking (the run's execution is over)."""
        self._done.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._done.wait(self._every):
            try:
                with self._store.read() as conn:
                    hold = read(self._store.runs.held(conn, self._run_id))
            except Exception as exc:  # noqa: BLE001 - the store may be down a moment; the next look tries again
                log.debug("run %s: hold look failed: %s", self._run_id, exc)
                continue
            if hold is not None and hold.state == ASKED:
                self.seen = hold
                self._stop.request(hold.stop_why())
                return


def refuse(row: Any, run_id: str) -> None:
    """A start refused: a paused run goes on only once unpaused, a cancelled one never.

    Raises:
        RunPaused: it is paused.
        RunCancelled: it is cancelled.
    """
    hold = read(row.held_json)
    said = f" ({hold.line()})" if hold is not None else ""
    if row.status == RunStatus.PAUSED.value:
        raise RunPaused(f"run {run_id!r} is paused{said}; `phasegate unpause {run_id} --reason TEXT` lets it go on")
    if row.status == RunStatus.CANCELLED.value:
        raise RunCancelled(f"run {run_id!r} is cancelled{said}; a cancelled run is final")


def withdrawn(store: Store, run_id: str) -> bool:
    """Whether no hold is asked of the run now (one it stopped for was withdrawn by an unpause)."""
    with store.read() as conn:
        hold = read(store.runs.held(conn, run_id))
    return hold is None or hold.state != ASKED
