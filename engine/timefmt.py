"""How a stored time (seconds since the epoch) is written for people and
for JSON: ISO 8601 in UTC, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ts: float | None) -> str | None:
    """Write a time as `YYYY-MM-DDTHH:MM:SSZ`.

    Args:
        ts: Seconds since the epoch, or None.

    Returns:
        The UTC time to the second, or None for None. A time no calendar can
        write (nan, inf, past year 9999 or before year 1: a stored value from
        an older store, or a row edited) is written as the number it is,
        `out of range (3e+11 s since the epoch)`: shown, not raised, so one
        such row does not take a whole list down with it.
    """
    if ts is None:
        return None
    try:
        return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):
        return f"out of range ({float(ts):g} s since the epoch)"
