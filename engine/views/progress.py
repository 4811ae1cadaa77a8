"""A run's last-known progress as every screen shows it: `status`, `status
--json`, the console's bar and `follow` ask this module, so the rate, the
time left and "stalled" are judged in one place.

The stored record is the run row's `progress_json` (run/progress.py writes
it): untrusted like every stored value, read through `progress.read`, and its
message escaped before it reaches a terminal (`safe`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..run import progress as _progress
from ..safetext import safe
from ..states import RunStatus
from ..timefmt import iso

#: A running run whose progress has not moved for this long is shown as
#: stalled (seconds): the bar stopped while the run says it is running. A
#: run whose lease lapsed while its process lives is stalled sooner, by
#: liveness (views/liveness.py).
STALL_SECONDS = 60.0


@dataclass(frozen=True)
class ProgressView:
    """A phase's last-known progress (`status --json`'s `progress`)."""

    phase: str
    """The phase that reported it."""
    done: float
    """How much is done."""
    total: float | None
    """How much there is in all, or None when the phase did not say."""
    message: str | None
    """The phase's line about where it is, as stored (escape it to show it: `said`)."""
    at: float
    """When it was reported (UNIX seconds)."""
    began_at: float
    """When this execution of the phase made its first report (not in the JSON)."""
    began_done: float
    """What that first report said was done (not in the JSON)."""

    @classmethod
    def from_row(cls, row: Any) -> ProgressView | None:
        """The progress a row of the runs table records, if any.

        Args:
            row: A row of the runs table (a store before version 8 has no column: None).

        Returns:
            The view, or None when the run has none (or the stored value is not a record).
        """
        got = _progress.read(getattr(row, "progress_json", None))
        if got is None:
            return None
        return cls(
            phase=got["phase"],
            done=got["done"],
            total=got["total"],
            message=got["message"],
            at=got["at"],
            began_at=got["began_at"],
            began_done=got["began_done"],
        )

    @property
    def fraction(self) -> float | None:
        """How much of `total` is done, from 0 to 1; None without a total."""
        if self.total is None:
            return None
        return max(0.0, min(1.0, self.done / self.total))

    @property
    def rate(self) -> float | None:
        """Units done per second since the phase's first report; None until it moved."""
        span = self.at - self.began_at
        moved = self.done - self.began_done
        if span <= 0 or moved <= 0:
            return None
        return moved / span

    @property
    def eta(self) -> float | None:
        """Seconds left at `rate`, from the last report; None without a total or a rate."""
        rate = self.rate
        if self.total is None or rate is None:
            return None
        return max(0.0, (self.total - self.done) / rate)

    def stalled(self, status: RunStatus, now: float) -> bool:
        """Whether the bar is shown as stalled: the run is stalled by its lease
        (its process alive but frozen), or says `running` while its progress
        has not moved for `STALL_SECONDS`.

        Args:
            status: The run's effective status at `now`.
            now: UNIX seconds.

        Returns:
            True when the bar should say stalled.
        """
        if status is RunStatus.STALLED:
            return True
        return status is RunStatus.RUNNING and now - self.at > STALL_SECONDS

    def said(self) -> str:
        """The report in words, for a terminal.

        Returns:
            One line of escaped text: `load 5000/10000 (50%) - 5000 rows`.
        """
        count = _num(self.done) if self.total is None else f"{_num(self.done)}/{_num(self.total)}"
        frac = self.fraction
        line = f"{safe(self.phase)} {count}"
        if frac is not None:
            line += f" ({int(frac * 100)}%)"
        if self.message:
            line += f" - {safe(self.message)}"
        return line

    def pace(self) -> str:
        """The rate and the time left in words.

        Returns:
            `120/s, 42s left`; empty when neither is known.
        """
        parts = []
        rate = self.rate
        if rate is not None:
            parts.append(f"{rate:.3g}/s" if rate < 100 else f"{int(rate)}/s")
        eta = self.eta
        if eta is not None:
            parts.append(f"{duration(eta)} left")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """As `status --json` prints it.

        Returns:
            `phase`, `done`, `total`, `message` (as stored) and `at` (ISO 8601).
        """
        return {
            "phase": self.phase,
            "done": self.done,
            "total": self.total,
            "message": self.message,
            "at": iso(self.at),
        }


def duration(seconds: float) -> str:
    """A short duration: `42s`, `3m05s`, `2h10m`.

    Args:
        seconds: At least 0.

    Returns:
        The words.
    """
    s = max(0, int(seconds + 0.5))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
