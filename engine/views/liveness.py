"""Liveness judged again on a clock: the lease facts a view was built from,
kept with it, so a tool can say "running", "stalled" or "interrupted" anew
without reading the store. Leases lapse and processes die without writing
anything: only the clock and a pid check can tell.

`effective_status` and `holder_state` are the rules; this module only keeps
their inputs (the stored status and the lease columns) and asks them again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..run.lease import HolderState, holder_state
from ..states import RunStatus
from ..timefmt import iso
from .status import effective_status


@dataclass(frozen=True)
class Liveness:
    """A run's stored status and lease columns, as read (not in the JSON)."""

    status: str
    """The stored status (`running` covers live, stalled and interrupted runs)."""
    lease_owner: str | None = None
    """The lease's owner (`host:pid:nonce`), or None: no lease."""
    lease_host: str | None = None
    """The holder's host."""
    lease_pid: int | None = None
    """The holder's pid on that host."""
    lease_expires_at: float | None = None
    """When the lease lapses unless renewed (UNIX seconds)."""
    heartbeat_at: float | None = None
    """The holder's last renewal (UNIX seconds)."""

    @classmethod
    def from_row(cls, row: Any) -> Liveness:
        """The facts from a row of the runs table.

        Args:
            row: A checked row of the runs table.

        Returns:
            Its stored status and lease columns.
        """
        pid = getattr(row, "lease_pid", None)
        return cls(
            status=str(row.status),
            lease_owner=getattr(row, "lease_owner", None),
            lease_host=getattr(row, "lease_host", None),
            lease_pid=int(pid) if pid is not None else None,
            lease_expires_at=getattr(row, "lease_expires_at", None),
            heartbeat_at=getattr(row, "heartbeat_at", None),
        )

    @property
    def holder(self) -> str:
        """The holder as `host:pid` (the words `phasegate status` uses)."""
        return f"{self.lease_host}:{self.lease_pid}"

    def status_at(self, now: float) -> RunStatus:
        """The effective status at `now` (one pid check for a holder on this host).

        Args:
            now: UNIX seconds.

        Returns:
            The status as an operator sees it then.
        """
        return effective_status(self, now)

    def holder_at(self, now: float) -> HolderState:
        """Who holds the run at `now` (`holder_state`).

        Args:
            now: UNIX seconds.

        Returns:
            none, live, stalled or gone.
        """
        return holder_state(self, now)

    def said(self, now: float) -> str:
        """The holder in one line, for a run stored `running`:
        "held by vm:30500, heartbeat 4s ago, lease until 06:09:19".

        Args:
            now: UNIX seconds (the heartbeat's age is counted from it).

        Returns:
            The line; empty when no lease is recorded.
        """
        if self.lease_owner is None:
            return ""
        beat = "no heartbeat yet" if self.heartbeat_at is None else f"heartbeat {_ago(now - self.heartbeat_at)} ago"
        until = str(iso(self.lease_expires_at) or "-").replace("T", " ").rstrip("Z")
        state = self.holder_at(now)
        if state is HolderState.GONE:
            return f"holder {self.holder} gone (last {beat}), lease was until {until}"
        if state is HolderState.STALLED:
            return f"held by {self.holder}, alive but past its lease (until {until}), {beat}"
        return f"held by {self.holder}, {beat}, lease until {until}"


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {(s % 3600) // 60} min"
