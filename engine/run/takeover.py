"""A takeover, said where the run's history shows it: a process that finds
the run's holder gone (or stalled, with `--force`) notes when the holder was
last heard from, who it was and who took over ("interrupted 06:08:49 UTC,
holder vm:30500 gone; resumed by worker vm:12966"). A dead holder writes
nothing, so without this note nothing would say it happened."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from .. import _host, _json
from .lease import HolderState

if TYPE_CHECKING:
    from ..store._runs import RunChange


def note(row: Any, held: HolderState, now: float) -> str | None:
    """The line for taking `row`'s run over from its holder, or None when
    nobody held it (a clean stop gives its lease up).

    Args:
        row: The run's row as this process read it, before taking it.
        held: Its holder's state then (`holder_state`).
        now: The time of the takeover (UNIX seconds).

    Returns:
        The note, or None.
    """
    if row.lease_owner is None or held not in (HolderState.GONE, HolderState.STALLED):
        return None
    last = row.heartbeat_at if row.heartbeat_at is not None else row.lease_expires_at
    when = time.strftime("%H:%M:%S", time.gmtime(last)) + " UTC" if last is not None else "at an unknown time"
    how = "gone" if held is HolderState.GONE else "stalled (taken over with --force)"
    by = f"{_host.role()} {_host.HOST}:{os.getpid()}"
    return f"interrupted {when}, holder {row.lease_host}:{row.lease_pid} {how}; resumed by {by} at {_clock(now)}"


def record(row: Any, held: HolderState, now: float, notes: list[str], values: RunChange) -> None:
    """Add the takeover's note (if any) to the run's notes and to the row's
    update that takes the lease, so it shows from the first look.

    Args:
        row: The run's row before the takeover.
        held: Its holder's state then.
        now: The time of the takeover.
        notes: This start's notes (kept when the run's end is recorded).
        values: The columns the takeover writes; `notes_json` is set here.
    """
    said = note(row, held, now)
    if said is None:
        return
    notes.append(said)
    values["notes_json"] = _json.dumps(notes)


def _clock(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts))
