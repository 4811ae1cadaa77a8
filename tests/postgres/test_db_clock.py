"""On PostgreSQL, lease times come from the server's clock (#16): a host whose
own clock is an hour behind still takes a lease that every other host sees
as live, instead of one that looks expired (or far in the future) to them."""

from __future__ import annotations

import time
from typing import Any

import pytest

from phasegate import Engine, RunHeld, Workflow


def test_a_lease_taken_by_a_host_with_a_skewed_clock_is_live_for_the_others(pg_url: str) -> None:
    seen: dict[str, Any] = {}
    wf = Workflow("skewed")

    @wf.phase()
    def only(ctx) -> str:
        # Another host (a true clock) looks at the run while this one works on it.
        other = Engine(pg_url, lease_seconds=30)
        try:
            seen["status"] = other.status("s1").status.value
            try:
                other.run(wf, "s1")
            except RunHeld as exc:
                seen["refused"] = exc.holder
            except Exception as exc:  # noqa: BLE001 - what it was, for the assertion
                seen["refused"] = type(exc).__name__
        finally:
            other.close()
        return "done"

    behind = Engine(pg_url, lease_seconds=30, clock=lambda: time.time() - 3600)
    try:
        out = behind.run(wf, "s1")
    finally:
        behind.close()
    assert out.status == "completed"
    assert seen["status"] == "running", seen
    assert seen.get("refused", "").count(":") == 1, seen  # refused as held by the skewed host: RunHeld


@pytest.mark.parametrize("ahead", [3600.0])
def test_a_host_with_its_clock_ahead_does_not_see_a_live_lease_as_expired(pg_url: str, ahead: float) -> None:
    seen: dict[str, Any] = {}
    wf = Workflow("ahead")

    @wf.phase()
    def only(ctx) -> str:
        other = Engine(pg_url, lease_seconds=30, clock=lambda: time.time() + ahead)
        try:
            try:
                other.run(wf, "a1")
            except RunHeld:
                seen["refused"] = "held"
            except Exception as exc:  # noqa: BLE001
                seen["refused"] = type(exc).__name__
        finally:
            other.close()
        return "done"

    eng = Engine(pg_url, lease_seconds=30)
    try:
        assert eng.run(wf, "a1").status == "completed"
    finally:
        eng.close()
    assert seen == {"refused": "held"}, seen
