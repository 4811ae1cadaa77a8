"""Who is working: each `phasegate worker`'s heartbeat in the store, and the
one rule for whether a worker is alive.

A worker writes its row when it starts, every `every` seconds while it runs
(from a thread of its own, so a long phase does not silence it) and when it
exits cleanly (state `stopped`). A worker is **alive** while

- its state is `running`,
- its last heartbeat is at most `ALIVE_BEATS` heartbeat intervals old (15 s
  at the default `--heartbeat 5`), on the lease clock every process of the
  store shares (the server's on PostgreSQL), and
- on this host, its pid is a live process: a worker killed with SIGKILL is
  seen at once, as a dead lease holder is (`lease.holder_state`).

Rows of workers not seen for `PRUNE_AFTER` seconds are deleted when a worker
starts, and only the `KEEP_STOPPED` most recent stopped rows are kept, so the
table stays small however often workers restart.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import _json
from .._host import HOST, new_owner, pid_alive, set_role
from ..store.store import Store
from ..timefmt import iso

log = logging.getLogger("phasegate.worker")

ALIVE_BEATS = 3
"""A worker is alive while its last heartbeat is at most this many intervals
old: one late beat (a busy store, a slow disk) does not make it look dead."""

DEFAULT_EVERY = 5.0
"""Seconds between a worker's heartbeats unless `--heartbeat` says otherwise."""

PRUNE_AFTER = 7 * 86400.0
"""A worker row not seen for this long is deleted (a week of history)."""

KEEP_STOPPED = 50
"""Stopped workers' rows kept, the most recent first."""


@dataclass(frozen=True)
class WorkerView:
    """One worker as the store last heard from it."""

    worker_id: str
    """The worker's id in the store (host, pid and start)."""
    host: str
    """The machine it runs on."""
    pid: int
    """Its process id there."""
    started_at: float
    """When it started (UNIX seconds)."""
    last_seen: float
    """Its last heartbeat (UNIX seconds, on the lease clock)."""
    every: float
    """Its heartbeat interval, in seconds."""
    jobs: int
    """How many runs it resumes at once (`--jobs`)."""
    resuming: tuple[str, ...]
    """The runs it was resuming at its last heartbeat."""
    resumed: int
    """Runs it resumed since it started."""
    state: str
    """running or stopped (a clean exit)."""
    alive: bool
    """Not stopped, heard from within `window` seconds, and on this host its process is alive."""
    seen_ago: float
    """Seconds since its last heartbeat, on the lease clock."""

    @property
    def window(self) -> float:
        """How old its last heartbeat may be while it counts as alive."""
        return ALIVE_BEATS * self.every

    def to_json(self) -> dict[str, Any]:
        """The worker as `phasegate workers --json` prints it.

        Returns:
            Its fields, times as ISO 8601, `seen_seconds_ago`,
            `heartbeat_seconds` and `alive_window_seconds`.
        """
        return {
            "worker_id": self.worker_id,
            "host": self.host,
            "pid": self.pid,
            "state": self.state,
            "alive": self.alive,
            "started_at": iso(self.started_at),
            "last_seen": iso(self.last_seen),
            "seen_seconds_ago": round(self.seen_ago, 1),
            "heartbeat_seconds": self.every,
            "alive_window_seconds": self.window,
            "jobs": self.jobs,
            "resuming": list(self.resuming),
            "resumed": self.resumed,
        }


def is_alive(row: Any, now: float) -> bool:
    """The one rule (see the module's text). A damaged row is not alive."""
    try:
        if row.state != "running":
            return False
        every, seen = float(row.every), float(row.last_seen)
        if not (math.isfinite(every) and math.isfinite(seen)):
            return False
        if row.host == HOST and not pid_alive(int(row.pid)):
            return False
        return now - seen <= ALIVE_BEATS * every
    except (TypeError, ValueError, OverflowError):
        return False


def _view(row: Any, now: float) -> WorkerView | None:
    try:
        busy = _json.loads(row.busy_json) if isinstance(row.busy_json, str) else []
        resuming = tuple(str(b) for b in busy) if isinstance(busy, list) else ()
        return WorkerView(
            worker_id=str(row.worker_id),
            host=str(row.host),
            pid=int(row.pid),
            started_at=float(row.started_at),
            last_seen=float(row.last_seen),
            every=float(row.every),
            jobs=int(row.jobs),
            resuming=resuming,
            resumed=int(row.handled),
            state=str(row.state),
            alive=is_alive(row, now),
            seen_ago=max(0.0, now - float(row.last_seen)),
        )
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None  # a damaged row: not a worker anyone can count on


def list_workers(store: Store, clock: Callable[[], float], *, limit: int = 100) -> list[WorkerView]:
    """The workers the store knows, most recently seen first."""
    with store.read() as conn:
        return workers_on(store, conn, clock(), limit=limit)


def workers_on(store: Store, conn: Any, host_now: float, *, limit: int = 100) -> list[WorkerView]:
    """`list_workers`, read inside a transaction the caller holds.

    Args:
        store: The store.
        conn: The caller's read transaction.
        host_now: This host's time (the lease clock is the server's on PostgreSQL).
        limit: At most this many workers.

    Returns:
        The workers, most recently seen first (a damaged row left out).
    """
    now = store.lease_clock(conn, host_now)
    rows = store.workers.recent(conn, limit=limit)
    return [v for v in (_view(r, now) for r in rows) if v is not None]


class Beacon:
    """A worker's heartbeat: its row written at `start`, every `every`
    seconds from a thread with its own connections, and at `stop` (marked
    stopped). `doing` tells what the worker is resuming now and how many
    runs it has resumed."""

    def __init__(
        self,
        store: Store,
        *,
        jobs: int,
        every: float,
        clock: Callable[[], float],
        doing: Callable[[], tuple[list[str], int]],
    ) -> None:
        self.store = store
        self.worker_id = new_owner()
        self.jobs = jobs
        self.every = every
        self.clock = clock
        self.doing = doing
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="phasegate-worker-heartbeat", daemon=True)

    def _values(self, state: str) -> dict[str, Any]:
        busy, handled = self.doing()
        return {
            "worker_id": self.worker_id,
            "host": HOST,
            "pid": os.getpid(),
            "last_seen": self.clock(),
            "every": self.every,
            "jobs": self.jobs,
            "busy_json": _json.dumps(sorted(busy)),
            "handled": handled,
            "state": state,
        }

    def beat(self, state: str = "running") -> None:
        self.store.workers.beat(self._values(state))

    def start(self) -> None:
        """The first beat, then old rows pruned, then the timer. A store that
        cannot be written now is said once; the timer tries again."""
        set_role("worker")  # a run this process takes over says a worker did
        try:
            self.beat()
            with self.store.write() as conn:
                now = self.store.lease_clock(conn, self.clock())
                self.store.workers.prune(conn, seen_before=now - PRUNE_AFTER, keep=KEEP_STOPPED)
        except Exception as exc:  # noqa: BLE001 - the heartbeat is a courtesy; the work goes on
            log.warning("could not record this worker's heartbeat: %s", exc)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried at the next one
                log.warning("worker heartbeat failed: %s", exc)

    def stop(self) -> None:
        """Stop the timer and mark this worker stopped (a clean exit)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        try:
            self.beat("stopped")
        except Exception as exc:  # noqa: BLE001 - it then lapses by its heartbeat's age
            log.warning("could not mark this worker stopped: %s", exc)
