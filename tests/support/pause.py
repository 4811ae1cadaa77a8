"""Frozen processes for the pause tests: a child that stopped itself at a
pause point (`PHASEGATE_PAUSE_AT`, see phasegate/_pause.py), seen stopped
through /proc, and continued with SIGCONT."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

from tests.support.waiting import until


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
    """`until` (tests/support/waiting.py), asking again while `pred` raises:
    the store may be mid-creation."""
    until(pred, what, timeout=timeout, every=0.02, ignoring=(Exception,))


def wait_stopped(pid: int, alive: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Wait until `pid` froze itself; False if it ended first (the point was never reached)."""
    until(lambda: stopped(pid) or not alive(), f"process {pid} to stop itself or end", timeout=timeout, every=0.01)
    return stopped(pid)


def thaw(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)
