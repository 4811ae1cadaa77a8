"""Frozen processes for the pause tests: a child that stopped itself at a
pause point (`PHASEGATE_PAUSE_AT`, see phasegate/_pause.py), seen stopped
through /proc, and continued with SIGCONT."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable


def state(pid: int) -> str:
    """The process's state letter (R, S, T for stopped, Z...), '' once gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def stopped(pid: int) -> bool:
    return state(pid) in ("T", "t")


def wait_for(pred: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if pred():
                return
        except Exception:  # noqa: BLE001 - the store may be mid-creation; ask again
            pass
        time.sleep(0.02)
    raise AssertionError(f"{what} not reached in {timeout}s")


def wait_stopped(pid: int, alive: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Wait until `pid` froze itself; False if it ended first (the point was never reached)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if stopped(pid):
            return True
        if not alive():
            return False
        time.sleep(0.01)
    raise AssertionError(f"process {pid} neither stopped nor ended in {timeout}s")


def thaw(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)
