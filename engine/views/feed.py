"""Noticing that another process changed the store, without a key press:
the change feed the console and `phasegate watch` share.

File events (watchfiles on the database's folder, filtered to the database,
its `-wal` and its `-journal`; not `-shm`, which every reader rewrites) say
*something* touched the files; SQLite's `data_version` (through the engine's probe) on one long-lived
connection says whether another connection really committed. Where events do
not arrive (network filesystems, some containers), the same loop asks
`data_version` every `poll` seconds anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

log = logging.getLogger("phasegate.feed")


class Probe(Protocol):
    def changed(self) -> bool: ...

    def close(self) -> None: ...


def store_files(db: Path) -> frozenset[str]:
    """The file names whose changes may mean a commit.

    Args:
        db: An SQLite store's file.

    Returns:
        Its own name and its WAL's and rollback journal's, in its folder.
    """
    return frozenset({db.name, db.name + "-wal", db.name + "-journal"})


def watch_store(
    db: Path | None,
    make_probe: Callable[[], Probe],
    on_change: Callable[[str], object],
    stop: threading.Event,
    *,
    poll: float = 2.0,
    debounce_ms: int = 200,
    use_events: bool = True,
    on_start: Callable[[], object] | None = None,
) -> None:
    """Call `on_change(source)` after each commit by another connection until
    `stop` is set. Blocking: run it in a thread. The probe is created and used
    in this thread only (one connection, one thread). With no database file
    (a PostgreSQL store) there are no file events; the probe is polled.
    `on_start` runs once the baseline is taken: a first full look made then
    cannot miss a commit that lands before the feed starts.

    Args:
        db: The SQLite store's file whose folder is watched, or None (a
            PostgreSQL store: LISTEN/NOTIFY where the probe can wait, else polling).
        make_probe: Makes the change probe (`Engine.data_version`), in this thread.
        on_change: Called with what noticed the commit: "files", "notify" or "poll".
        stop: Set it to end the watch.
        poll: Seconds between looks when no event arrives.
        debounce_ms: File events closer together than this are one change.
        use_events: False: poll only, no file events.
        on_start: Called once, when the baseline is taken.
    """
    probe = make_probe()
    try:
        probe.changed()  # the first answer only sets the baseline
        if on_start is not None:
            on_start()
        if use_events and db is not None:
            try:
                _watch_events(db, probe, on_change, stop, poll=poll, debounce_ms=debounce_ms)
                return
            except Exception as exc:  # noqa: BLE001 - no inotify, too many watches...: polling still works
                log.warning("file events unavailable (%s); polling every %gs", exc, poll)
        wait = getattr(probe, "wait", None)
        if db is None and wait is not None:
            # PostgreSQL: LISTEN/NOTIFY wakes us at once; the timeout is the
            # polling fallback (a dropped notification is caught by changed()).
            try:
                while not stop.is_set():
                    if wait(min(poll, 0.5)):
                        on_change("notify")
                return
            except Exception as exc:  # noqa: BLE001 - the listening connection dropped
                log.warning("change notifications lost (%s); refreshing every %gs", exc, poll)
            while not stop.wait(poll):
                on_change("poll")
            return
        while not stop.wait(poll):
            if probe.changed():
                on_change("poll")
    finally:
        probe.close()


def _watch_events(
    db: Path, probe: Probe, on_change: Callable[[str], object], stop: threading.Event, *, poll: float, debounce_ms: int
) -> None:
    import watchfiles

    names = store_files(db)

    def only_store(_change: watchfiles.Change, path: str) -> bool:
        return Path(path).name in names

    for changes in watchfiles.watch(
        db.parent,
        watch_filter=only_store,
        debounce=debounce_ms,
        step=50,
        stop_event=stop,
        rust_timeout=int(poll * 1000),
        yield_on_timeout=True,
        recursive=False,
        raise_interrupt=False,
    ):
        # An empty batch is the poll timeout: ask anyway, events may be missing.
        if probe.changed():
            on_change("files" if changes else "poll")
