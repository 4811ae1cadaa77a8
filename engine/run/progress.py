"""A running phase's progress (`ctx.progress`): cheap, coalesced, not a checkpoint.

A phase may report progress at every item of a 10,000-item loop. Each
report only replaces the one value this object keeps in memory (no lock, no
store call: an attribute store and a clock read), so a loop that reports
costs about what it costs without reporting. What reaches the store is the
latest value, at most once per `interval` (half a second): in the run's next
hot transaction when one comes after the value is due (a durable step, an
effect's intent or completion), else alone, from a timer thread, a little
after it is due. So a phase that reports and commits steps adds no commit of
its own; one that reports and commits nothing adds about two a second.

The stored value (the run row's `progress_json`, schema version 8) is the
run's last-known progress: a kill leaves it as it was, and the next start of
the phase overwrites it with its own reports. The phase's checkpoint clears
it in the same statement that moves the run's head (store/_hotpath.py), and
the progress write is fenced by the lease and the run's `running` status, so
a late value never outlives its phase or a lease that moved on.

Layer: `engine.run`; it reads nothing and writes one column through the hot path.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

from .. import _json
from ..errors import UsageError

if TYPE_CHECKING:  # annotations only: the store's module loads SQLAlchemy
    from ..store.store import HotTx, Store
    from .lease import Fence

log = logging.getLogger("phasegate.progress")

#: At most one store write of a run's progress per this many seconds.
INTERVAL = 0.5
#: How long past due the timer leaves a value for a transaction to ride with.
GRACE = 0.1
#: The longest message kept (characters); a longer one is cut, not refused.
MESSAGE_MAX = 200


class StoredProgress(TypedDict):
    """The run row's `progress_json`: a phase's last-known progress."""

    phase: str
    done: float
    total: float | None
    message: str | None
    at: float
    began_at: float
    """When the phase's execution made its first report: with `began_done`,
    the rate a view estimates the time left from."""
    began_done: float


@dataclass(frozen=True)
class Report:
    """One `ctx.progress` call, as kept in memory until it is written."""

    phase: str
    """The phase that reported it."""
    done: float
    """How much is done (a count, or any unit `total` is in)."""
    total: float | None
    """How much there is in all, or None when not known."""
    message: str | None
    """A short line about where it is, as given (cut to `MESSAGE_MAX`)."""
    at: float
    """When it was reported (UNIX seconds, the run's clock)."""
    began_at: float
    """When this execution of the phase made its first report."""
    began_done: float
    """What that first report said was done."""

    def stored(self) -> StoredProgress:
        """The report as the run row keeps it."""
        return {
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "message": self.message,
            "at": self.at,
            "began_at": self.began_at,
            "began_done": self.began_done,
        }


def checked(done: object, total: object, message: object) -> tuple[float, float | None, str | None]:
    """`ctx.progress`'s arguments, checked: the one rule for what a report may say.

    Args:
        done: A finite number, at least 0.
        total: None, or a finite number above 0.
        message: None, or a text (cut to `MESSAGE_MAX` characters).

    Returns:
        (done, total, message) as they are kept.

    Raises:
        UsageError: a value out of those bounds (a bool is not a number here).
    """
    # The common call first, in a few exact type tests (a loop makes it
    # 10,000 times): an int count, an int total or none, a short text or none.
    if (
        type(done) is int
        and done >= 0
        and (total is None or (type(total) is int and total > 0))
        and (message is None or (type(message) is str and len(message) <= MESSAGE_MAX))
    ):
        return done, total, message
    if isinstance(done, bool) or not isinstance(done, int | float) or not math.isfinite(done) or done < 0:
        raise UsageError(f"ctx.progress: done must be a finite number >= 0, not {done!r}")
    if total is not None and (
        isinstance(total, bool) or not isinstance(total, int | float) or not math.isfinite(total) or total <= 0
    ):
        raise UsageError(f"ctx.progress: total must be None or a finite number > 0, not {total!r}")
    if message is not None and not isinstance(message, str):
        raise UsageError(f"ctx.progress: message must be None or a string, not {type(message).__name__}")
    return done, total, (message[:MESSAGE_MAX] if message is not None else None)


class Progress:
    """A run's latest progress report, and when it goes to the store.

    One per execution of a run (the runner's); every phase context of the
    execution reports to it. `Completions.hot_tx` asks it (`ride`) for a due
    value in each of the run's hot transactions."""

    def __init__(self, store: Store, fence: Fence, clock: Callable[[], float], interval: float = INTERVAL) -> None:
        self._store = store
        self._fence = fence
        self._clock = clock
        self.interval = interval
        """The least time between two writes of the run's progress (seconds)."""
        self._began: tuple[str, float, float] = ("", 0.0, 0.0)
        """(phase, when, done) of the current phase's first report."""
        self._pending: tuple[str, float, float | None, str | None, float, float, float] | None = None
        """The latest report not yet written, as `Report`'s fields (replaced
        by each report: no lock, one store of a tuple, no object built)."""
        self._written_at = float("-inf")
        """When progress was last written (monotonic)."""
        self._armed = False
        self._armed_at = 0.0
        """When the timer was armed (monotonic): the first report not yet written waits from then."""
        self._closed = False
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.writes = 0
        """How many times a report reached the store (riding or alone): for tests and bench."""

    # -- the phase's side ---------------------------------------------------------

    def report(self, phase: str, done: float, total: float | None, message: str | None) -> None:
        """Keep this as the latest report (checked already: `checked`)."""
        now = self._clock()
        began = self._began
        if began[0] != phase:
            began = self._began = (phase, now, done)
        self._pending = (phase, done, total, message, now, began[1], began[2])
        if not self._armed:
            self._arm()

    def end_phase(self, phase: str) -> None:
        """The phase is about to checkpoint (which clears the stored value):
        a report of it not yet written is dropped, never written after."""
        with self._cond:
            pending = self._pending
            if pending is not None and pending[0] == phase:
                self._pending = None
            if self._began[0] == phase:
                self._began = ("", 0.0, 0.0)

    # -- the store's side -------------------------------------------------------------

    def ride(self, tx: HotTx) -> None:
        """(a hot transaction of the run, under the hot lock) Write the latest
        report in it when one is due. Taken under the hot lock, so a
        checkpoint that clears the value cannot be overtaken by it."""
        pending = self._pending
        if pending is None or time.monotonic() - self._written_at < self.interval:
            return
        self._write(tx, pending)

    def _write(self, tx: HotTx, pending: tuple[str, float, float | None, str | None, float, float, float]) -> None:
        params: dict[str, Any] = {
            "progress_json": _json.dumps(Report(*pending).stored()),
            "run_id": self._fence.run_id,
            "owner": self._fence.owner,
            "now": self._clock(),
        }
        tx.run("progress", params)  # 0 rows: the lease moved on or the run stopped; nothing to say
        with self._cond:
            if self._pending is pending:
                self._pending = None
            self._written_at = time.monotonic()
            self.writes += 1

    def flush(self) -> None:
        """Write the latest report now, alone, whether due or not."""
        with self._store.hot_tx() as tx:
            pending = self._pending
            if pending is not None:
                self._write(tx, pending)

    # -- the timer ---------------------------------------------------------------------

    def _arm(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._armed = True
            self._armed_at = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name=f"phasegate-progress-{self._fence.run_id}", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._armed:
                    self._cond.wait()
                if self._closed:
                    return
                if self._pending is None:
                    self._armed = False
                    # A report between the check and the flag (the phase reads
                    # `_armed` without the lock) would otherwise wait forever.
                    if self._pending is not None:
                        self._armed = True
                        self._armed_at = time.monotonic()
                    continue
                # Due `interval` after the last write, and never before a
                # report has waited `GRACE` for a transaction to ride with.
                due = max(self._written_at + self.interval, self._armed_at) + GRACE
                left = due - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - progress is advisory: the run goes on without it
                log.warning("run %s: progress not recorded: %s", self._fence.run_id, exc)
                with self._cond:
                    self._written_at = time.monotonic()  # not again at once

    def close(self) -> None:
        """Stop the timer; what was not written is left unwritten (a report is not a record)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread() and thread.is_alive():
            thread.join(timeout=5)


def read(text: object) -> StoredProgress | None:
    """A run row's `progress_json`, as far as it is a progress record (stored data: untrusted).

    Args:
        text: The column's value.

    Returns:
        The record, or None when there is none or it is not one.
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        got = _json.loads(text)
    except ValueError:
        return None
    if not isinstance(got, dict):
        return None
    phase, message = got.get("phase"), got.get("message")
    done, total, at = _number(got.get("done")), _number(got.get("total")), _number(got.get("at"))
    if not isinstance(phase, str) or done is None or at is None:
        return None
    began_at, began_done = _number(got.get("began_at")), _number(got.get("began_done"))
    if began_at is None or began_done is None:
        began_at, began_done = at, done
    return {
        "phase": phase,
        "done": done,
        "total": total,
        "message": message if isinstance(message, str) else None,
        "at": at,
        "began_at": began_at,
        "began_done": began_done,
    }


def _number(v: object) -> float | None:
    """A stored finite number as it is (an int stays one, for the JSON), else None."""
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        return v
    return None
