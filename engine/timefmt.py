"""How a stored time (seconds since the epoch) is written for people and
for JSON: ISO 8601 in UTC, to the second."""

from __future__ import annotations

from datetime import UTC, datetime


def iso(ts: float | None) -> str | None:
    """Write a time as `YYYY-MM-DDTHH:MM:SSZ`.

    Args:
        ts: Seconds since the epoch, or None.

    Returns:
        The UTC time to the second, or None for None.
    """
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
