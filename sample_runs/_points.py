"""Pause points: named spots in the sample workflows where a process can be
told to stop and wait, so that the demo and the tests can SIGKILL it at an
exact place (between a charge and its record, say) instead of racing a timer.

They do nothing unless `PHASEGATE_SAMPLE_PAUSE_AT` names them, so ordinary
runs never notice them.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PAUSE_ENV = "PHASEGATE_SAMPLE_PAUSE_AT"
"""Comma-separated pause point names (`start:charge`, `charged:INV-1002`...)."""
BEACON_ENV = "PHASEGATE_SAMPLE_BEACON"
"""A file written with the point's name once the process has paused there."""

#: A paused process is meant to be killed; this only bounds a forgotten one.
_MAX_PAUSE_SECONDS = 120.0


def pause_point(name: str) -> None:
    """Stop here (and announce it) if this point was asked for."""
    wanted = os.environ.get(PAUSE_ENV)
    if not wanted or name not in wanted.split(","):
        return
    beacon = os.environ.get(BEACON_ENV)
    if beacon:
        tmp = Path(beacon + ".tmp")
        tmp.write_text(f"{name}\n{os.getpid()}\n")
        os.replace(tmp, beacon)
    deadline = time.monotonic() + _MAX_PAUSE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
    raise SystemExit(f"paused at {name} and nobody came to kill this process")


def pace(inputs: dict[str, object]) -> float:
    """The run's speed knob: simulated latencies are multiplied by it (0 makes
    them instant; the demo's live run uses a large one)."""
    try:
        return max(float(inputs.get("pace", 1.0)), 0.0)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1.0


def nap(inputs: dict[str, object], seconds: float) -> None:
    delay = seconds * pace(inputs)
    if delay > 0:
        time.sleep(delay)
